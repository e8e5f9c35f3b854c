package storage

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// continueVersion is the format tag of continue tokens, the one Kubernetes
// uses, so tokens look the same to clients whichever backend made them.
const continueVersion = "meta.k8s.io/v1"

// continueToken is the JSON inside a continue token. Start is the key to
// resume at, relative to the listed prefix and rooted at "/".
type continueToken struct {
	Version  string `json:"v"`
	Revision uint64 `json:"rv"`
	Start    string `json:"start"`
}

// EncodeContinue returns the opaque continue token of a list of prefix read
// at revision rv that resumes at nextKey (the first key not yet considered,
// usually the last returned key followed by "\x00"). nextKey must lie under
// prefix. The token is URL-safe base64 of
// {"v":"meta.k8s.io/v1","rv":rv,"start":"/<nextKey without prefix>"}.
func EncodeContinue(prefix, nextKey string, rv uint64) (string, error) {
	if !strings.HasPrefix(nextKey, prefix) {
		return "", fmt.Errorf("encoding continue token: key %q is not under prefix %q", nextKey, prefix)
	}
	rel := strings.TrimPrefix(nextKey, tokenBase(prefix))
	if rel == "" {
		return "", fmt.Errorf("encoding continue token: empty start key")
	}
	if rv == 0 {
		return "", fmt.Errorf("encoding continue token: revision 0")
	}
	b, err := json.Marshal(continueToken{Version: continueVersion, Revision: rv, Start: "/" + rel})
	if err != nil {
		return "", fmt.Errorf("encoding continue token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodeContinue is the inverse of EncodeContinue: it returns the absolute
// key to resume at, under prefix, and the revision the first page was read
// at. Malformed tokens fail with ErrInvalidContinue. A start key that would
// climb out of prefix (".." and the like) is rejected, and the key returned
// never sorts before prefix, so a token can never list more than prefix
// holds.
func DecodeContinue(prefix, token string) (nextKey string, rv uint64, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, fmt.Errorf("%w: not base64: %w", ErrInvalidContinue, err)
	}
	var c continueToken
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", 0, fmt.Errorf("%w: %w", ErrInvalidContinue, err)
	}
	if c.Version != continueVersion {
		return "", 0, fmt.Errorf("%w: unknown encoding version %q", ErrInvalidContinue, c.Version)
	}
	if c.Revision == 0 {
		return "", 0, fmt.Errorf("%w: missing resource version", ErrInvalidContinue)
	}
	if c.Start == "" {
		return "", 0, fmt.Errorf("%w: empty start key", ErrInvalidContinue)
	}
	start := c.Start
	if !strings.HasPrefix(start, "/") {
		start = "/" + start
	}
	if path.Clean(start) != start {
		return "", 0, fmt.Errorf("%w: start key %q is not a clean path", ErrInvalidContinue, c.Start)
	}
	key := tokenBase(prefix) + start[1:]
	if key < prefix {
		// Only possible when prefix does not end in "/": never list
		// before the prefix.
		key = prefix
	}
	return key, c.Revision, nil
}

// tokenBase is the part of prefix that start keys are relative to: prefix
// up to and including its last "/" (all of it for a well-formed prefix).
func tokenBase(prefix string) string {
	return prefix[:strings.LastIndexByte(prefix, '/')+1]
}
