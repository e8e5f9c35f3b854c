package authn

import (
	"context"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/podkit/podkit/apiserver/auth"
)

// TokenFile is the static token authenticator (--token-auth-file): a
// fixed table of tokens and their users.
type TokenFile struct {
	tokens []tokenEntry
}

type tokenEntry struct {
	token []byte
	user  *auth.DefaultUser
}

var _ auth.TokenAuthenticator = (*TokenFile)(nil)

// LoadTokenFile reads a token file.
func LoadTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	tf, err := ParseTokenFile(f)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return tf, nil
}

// ParseTokenFile parses Kubernetes' static token CSV: one line per token,
// `token,user,uid[,"group1,group2"]`. Blank lines are skipped; a line with
// fewer than three columns or an empty token is an error.
func ParseTokenFile(r io.Reader) (*TokenFile, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	tf := &TokenFile{}
	seen := map[string]bool{}
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if len(rec) < 3 {
			return nil, fmt.Errorf("line %d: must have at least 3 columns (token, user name, user uid), found %d", line, len(rec))
		}
		if rec[0] == "" {
			return nil, fmt.Errorf("line %d: empty token", line)
		}
		if seen[rec[0]] {
			return nil, fmt.Errorf("line %d: duplicate token", line)
		}
		seen[rec[0]] = true
		u := &auth.DefaultUser{Name: rec[1], UID: rec[2]}
		if len(rec) > 3 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		tf.tokens = append(tf.tokens, tokenEntry{token: []byte(rec[0]), user: u})
	}
	return tf, nil
}

// AuthenticateToken implements auth.TokenAuthenticator. Every entry is
// compared in constant time, so timing tells nothing about the table.
func (tf *TokenFile) AuthenticateToken(_ context.Context, token string) (*auth.Response, bool, error) {
	var found *auth.DefaultUser
	b := []byte(token)
	for _, e := range tf.tokens {
		if subtle.ConstantTimeCompare(e.token, b) == 1 {
			found = e.user
		}
	}
	if found == nil {
		return nil, false, nil
	}
	u := *found
	return &auth.Response{User: &u}, true, nil
}
