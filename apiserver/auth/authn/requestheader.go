package authn

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/podkit/podkit/apiserver/auth"
)

// RequestHeader is the authenticating-proxy authenticator
// (--requestheader-*): a front proxy that authenticated the user itself
// presents a client certificate signed by ClientCA, and names the user in
// headers. Identity headers from any other client are ignored (and
// stripped by the API server's filter, see StripHeaders).
type RequestHeader struct {
	// ClientCA verifies the proxy's certificate (required).
	ClientCA *x509.CertPool
	// AllowedNames, when not empty, lists the CommonNames a proxy
	// certificate may have.
	AllowedNames []string
	// UsernameHeaders, GroupHeaders and ExtraHeaderPrefixes default to
	// X-Remote-User, X-Remote-Group and X-Remote-Extra-.
	UsernameHeaders     []string
	GroupHeaders        []string
	ExtraHeaderPrefixes []string
}

var _ auth.Authenticator = (*RequestHeader)(nil)

func (a *RequestHeader) names() (user, group, extra []string) {
	user, group, extra = a.UsernameHeaders, a.GroupHeaders, a.ExtraHeaderPrefixes
	if len(user) == 0 {
		user = []string{"X-Remote-User"}
	}
	if len(group) == 0 {
		group = []string{"X-Remote-Group"}
	}
	if len(extra) == 0 {
		extra = []string{"X-Remote-Extra-"}
	}
	return user, group, extra
}

// AuthenticateRequest implements auth.Authenticator.
func (a *RequestHeader) AuthenticateRequest(r *http.Request) (*auth.Response, bool, error) {
	userH, groupH, extraP := a.names()
	name := ""
	for _, h := range userH {
		if v := r.Header.Get(h); v != "" {
			name = v
			break
		}
	}
	if name == "" {
		return nil, false, nil
	}
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil // not from a proxy: the headers mean nothing
	}
	cert, err := verifyClient(r.TLS.PeerCertificates, a.ClientCA)
	if err != nil {
		return nil, false, fmt.Errorf("request header: %w", err)
	}
	if len(a.AllowedNames) > 0 && !slices.Contains(a.AllowedNames, cert.Subject.CommonName) {
		return nil, false, fmt.Errorf("request header: client certificate CN %q is not allowed (allowed: %v)", cert.Subject.CommonName, a.AllowedNames)
	}
	u := &auth.DefaultUser{Name: name}
	for _, h := range groupH {
		for _, v := range r.Header.Values(h) {
			u.Groups = append(u.Groups, v)
		}
	}
	for key, vals := range r.Header {
		for _, p := range extraP {
			if len(key) > len(p) && strings.EqualFold(key[:len(p)], p) {
				k := strings.ToLower(key[len(p):])
				if uk, err := url.PathUnescape(k); err == nil {
					k = uk
				}
				if u.Extra == nil {
					u.Extra = map[string][]string{}
				}
				u.Extra[k] = append(u.Extra[k], vals...)
			}
		}
	}
	a.StripHeaders(r.Header)
	return &auth.Response{User: u}, true, nil
}

// StripHeaders removes the identity headers from h.
func (a *RequestHeader) StripHeaders(h http.Header) {
	userH, groupH, extraP := a.names()
	for _, k := range append(slices.Clone(userH), groupH...) {
		h.Del(k)
	}
	for key := range h {
		for _, p := range extraP {
			if len(key) >= len(p) && strings.EqualFold(key[:len(p)], p) {
				delete(h, key)
			}
		}
	}
}
