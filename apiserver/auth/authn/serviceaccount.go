package authn

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/auth/satoken"
	"github.com/podkit/podkit/apiserver/storage"
)

// Service-account identity, as Kubernetes names it.
const (
	ServiceAccountUserPrefix   = "system:serviceaccount:"
	ServiceAccountsGroup       = "system:serviceaccounts"
	ServiceAccountsGroupPrefix = "system:serviceaccounts:"
	// Extra keys of a service account's identity.
	ExtraPodName      = "authentication.kubernetes.io/pod-name"
	ExtraPodUID       = "authentication.kubernetes.io/pod-uid"
	ExtraNodeName     = "authentication.kubernetes.io/node-name"
	ExtraNodeUID      = "authentication.kubernetes.io/node-uid"
	ExtraCredentialID = "authentication.kubernetes.io/credential-id"
)

// ServiceAccountUser is "system:serviceaccount:<namespace>:<name>".
func ServiceAccountUser(namespace, name string) string {
	return ServiceAccountUserPrefix + namespace + ":" + name
}

// ObjectGetter reads stored objects by key (storage.Store fits).
type ObjectGetter interface {
	Get(ctx context.Context, key string) (runtime.Object, error)
}

// ServiceAccountTokens authenticates the service-account JWTs the
// TokenRequest API issues (--service-account-key-file,
// --service-account-issuer, --api-audiences). Beyond signature and
// expiry, a token is valid only while its service account, and the pod or
// secret it is bound to, still exist with the UIDs in the token: deleting
// the pod revokes its tokens at once.
type ServiceAccountTokens struct {
	// Keys verify signatures (required).
	Keys []crypto.PublicKey
	// Issuers accepted in "iss" (required).
	Issuers []string
	// Audiences: the token must name at least one (default: Issuers).
	Audiences []string
	// Objects looks the bound objects up (required).
	Objects ObjectGetter
	// Now defaults to time.Now.
	Now func() time.Time
}

var _ auth.TokenAuthenticator = (*ServiceAccountTokens)(nil)

var (
	podsGR            = schema.GroupResource{Resource: "pods"}
	secretsGR         = schema.GroupResource{Resource: "secrets"}
	serviceAccountsGR = schema.GroupResource{Resource: "serviceaccounts"}
)

// AuthenticateToken implements auth.TokenAuthenticator. Tokens that are
// not JWTs of one of Issuers are not its business.
func (a *ServiceAccountTokens) AuthenticateToken(ctx context.Context, token string) (*auth.Response, bool, error) {
	if !satoken.LooksLikeJWT(token) {
		return nil, false, nil
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	claims, err := satoken.Verify(token, a.Keys, now())
	if errors.Is(err, satoken.ErrSignature) {
		return nil, false, nil // another issuer's JWT, perhaps for the webhook
	}
	if err != nil {
		return nil, false, fmt.Errorf("service account token: %w", err)
	}
	if !slices.Contains(a.Issuers, claims.Issuer) {
		return nil, false, nil
	}
	audiences := a.Audiences
	if len(audiences) == 0 {
		audiences = a.Issuers
	}
	var matched []string
	for _, aud := range claims.Audience {
		if slices.Contains(audiences, aud) {
			matched = append(matched, aud)
		}
	}
	if len(matched) == 0 {
		return nil, false, fmt.Errorf("service account token: token audiences %q is invalid for the target audiences %q", []string(claims.Audience), audiences)
	}
	k := claims.Kubernetes
	if k == nil || k.Namespace == "" || k.ServiceAccount.Name == "" ||
		claims.Subject != ServiceAccountUser(k.Namespace, k.ServiceAccount.Name) {
		return nil, false, fmt.Errorf("service account token: %w: missing or inconsistent kubernetes.io claims", satoken.ErrMalformed)
	}
	if err := a.checkBound(ctx, k, now()); err != nil {
		return nil, false, fmt.Errorf("service account token: %w", err)
	}
	u := &auth.DefaultUser{Name: claims.Subject, UID: k.ServiceAccount.UID,
		Groups: []string{ServiceAccountsGroup, ServiceAccountsGroupPrefix + k.Namespace}, Extra: map[string][]string{}}
	if k.Pod != nil {
		u.Extra[ExtraPodName] = []string{k.Pod.Name}
		u.Extra[ExtraPodUID] = []string{k.Pod.UID}
	}
	if k.Node != nil {
		u.Extra[ExtraNodeName] = []string{k.Node.Name}
		u.Extra[ExtraNodeUID] = []string{k.Node.UID}
	}
	if claims.ID != "" {
		u.Extra[ExtraCredentialID] = []string{"JTI=" + claims.ID}
	}
	return &auth.Response{User: u, Audiences: matched}, true, nil
}

// checkBound requires the service account and the bound pod or secret to
// exist with the token's UIDs and not to be on their way out.
func (a *ServiceAccountTokens) checkBound(ctx context.Context, k *satoken.PrivateClaims, now time.Time) error {
	if _, err := a.get(ctx, serviceAccountsGR, k.Namespace, k.ServiceAccount.Name, k.ServiceAccount.UID, now); err != nil {
		return err
	}
	if k.Pod != nil {
		obj, err := a.get(ctx, podsGR, k.Namespace, k.Pod.Name, k.Pod.UID, now)
		if err != nil {
			return err
		}
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.ServiceAccountName != "" && pod.Spec.ServiceAccountName != k.ServiceAccount.Name {
			return fmt.Errorf("pod %s/%s runs as service account %q, not %q", k.Namespace, k.Pod.Name, pod.Spec.ServiceAccountName, k.ServiceAccount.Name)
		}
	}
	if k.Secret != nil {
		if _, err := a.get(ctx, secretsGR, k.Namespace, k.Secret.Name, k.Secret.UID, now); err != nil {
			return err
		}
	}
	return nil
}

func (a *ServiceAccountTokens) get(ctx context.Context, gr schema.GroupResource, ns, name, uid string, now time.Time) (runtime.Object, error) {
	kind := strings.TrimSuffix(gr.Resource, "s")
	obj, err := a.Objects.Get(ctx, storage.Key(gr, ns, name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%s %s/%s has been deleted", kind, ns, name)
	}
	if err != nil {
		return nil, fmt.Errorf("looking up %s %s/%s: %w", kind, ns, name, err)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", kind, ns, name, err)
	}
	if uid != "" && string(m.GetUID()) != uid {
		return nil, fmt.Errorf("%s %s/%s has been deleted and recreated (UID %s, the token's %s)", kind, ns, name, m.GetUID(), uid)
	}
	if dt := m.GetDeletionTimestamp(); dt != nil && !dt.Time.After(now) {
		return nil, fmt.Errorf("%s %s/%s is being deleted", kind, ns, name)
	}
	return obj, nil
}
