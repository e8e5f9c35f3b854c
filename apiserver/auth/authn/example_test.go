package authn_test

import (
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/podkit/podkit/apiserver/auth/authn"
)

// A chain as kube-apiserver builds it: bearer tokens from a static token
// file; every identity also gets system:authenticated.
func ExampleUnion() {
	tokens, err := authn.ParseTokenFile(strings.NewReader(`s3cret,jane,1001,"dev,ops"` + "\n"))
	if err != nil {
		panic(err)
	}
	chain := authn.WithAuthenticatedGroup(authn.Union(authn.Bearer(tokens)))
	r := httptest.NewRequest("GET", "/api", nil)
	r.Header.Set("Authorization", "Bearer s3cret")
	resp, ok, _ := chain.AuthenticateRequest(r)
	fmt.Println(ok, resp.User.GetName(), resp.User.GetGroups())
	_, ok, _ = chain.AuthenticateRequest(httptest.NewRequest("GET", "/api", nil))
	fmt.Println(ok)
	// Output:
	// true jane [dev ops system:authenticated]
	// false
}
