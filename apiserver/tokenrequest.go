package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/auth/satoken"
	"github.com/podkit/podkit/apiserver/storage"
)

// ServiceAccountIssuer signs the tokens of the TokenRequest API
// (serviceaccounts/<name>/token).
type ServiceAccountIssuer struct {
	// Signer holds the signing key (--service-account-signing-key-file).
	Signer *satoken.Signer
	// Issuer is the "iss" claim (--service-account-issuer).
	Issuer string
	// APIAudiences are the audiences of a token that names none
	// (--api-audiences; default [Issuer]).
	APIAudiences []string
	// MaxExpiration caps expirationSeconds
	// (--service-account-max-token-expiration); 0 means no cap.
	MaxExpiration time.Duration
}

// Audiences returns the API's audiences.
func (i *ServiceAccountIssuer) Audiences() []string {
	if len(i.APIAudiences) > 0 {
		return i.APIAudiences
	}
	return []string{i.Issuer}
}

var (
	gvAuthentication  = authenticationv1.SchemeGroupVersion
	tokenRequestGK    = schema.GroupKind{Group: "authentication.k8s.io", Kind: "TokenRequest"}
	minTokenExpiry    = int64(600)
	maxTokenExpiry    = int64(1 << 32)
	defaultTokenExpir = int64(3600)
)

// serveToken serves POST serviceaccounts/<name>/token: it signs a token
// for the account, bound to a pod or secret when the request names one
// (the bound object must exist with the given UID, and a pod must run as
// the account), so that deleting the object revokes the token.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request, info requestInfo) error {
	iss := s.cfg.ServiceAccountIssuer
	if iss == nil || iss.Signer == nil {
		return notFoundPath(r)
	}
	if info.Verb != "create" {
		return errMethodNotAllowed
	}
	t, obj, err := s.decodeRequest(w, r, gvAuthentication.WithKind("TokenRequest"), &authenticationv1.TokenRequest{})
	if err != nil {
		return err
	}
	req := obj.(*authenticationv1.TokenRequest)
	exp := defaultTokenExpir
	if req.Spec.ExpirationSeconds != nil {
		exp = *req.Spec.ExpirationSeconds
	}
	var errs field.ErrorList
	specPath := field.NewPath("spec", "expirationSeconds")
	switch {
	case exp < minTokenExpiry:
		errs = append(errs, field.Invalid(specPath, exp, "may not specify a duration less than 10 minutes"))
	case exp > maxTokenExpiry:
		errs = append(errs, field.TooLong(specPath, exp, int(maxTokenExpiry)))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(tokenRequestGK, info.Name, errs)
	}
	if iss.MaxExpiration > 0 && time.Duration(exp)*time.Second > iss.MaxExpiration {
		exp = int64(iss.MaxExpiration / time.Second)
	}
	ctx := r.Context()
	// Admission sees the TokenRequest as a create of serviceaccounts/token,
	// as in kube-apiserver: NodeRestriction confines a kubelet to tokens
	// bound to its own pods there.
	sas, _ := s.lookup(gvCore, "serviceaccounts")
	tinfo := requestInfo{Verb: "create", GroupVersion: gvCore, Resource: "serviceaccounts", Subresource: "token", Namespace: info.Namespace, Name: info.Name}
	attrs := attributes(admission.Create, sas, tinfo, req, nil, false)
	attrs.Kind = gvAuthentication.WithKind("TokenRequest")
	if err := s.admit(ctx, attrs, nil); err != nil {
		return err
	}
	saObj, err := s.store.Get(ctx, storage.Key(schema.GroupResource{Resource: "serviceaccounts"}, info.Namespace, info.Name))
	if err != nil {
		return storageError(err, schema.GroupResource{Resource: "serviceaccounts"}, info.Name)
	}
	sa := saObj.(*corev1.ServiceAccount)
	now := s.now()
	priv := &satoken.PrivateClaims{Namespace: info.Namespace, ServiceAccount: satoken.Ref{Name: sa.Name, UID: string(sa.UID)}}
	if ref := req.Spec.BoundObjectRef; ref != nil {
		if err := s.bindToken(r, priv, ref, sa.Name); err != nil {
			return err
		}
	}
	audiences := req.Spec.Audiences
	if len(audiences) == 0 {
		audiences = iss.Audiences()
	}
	expiry := now.Add(time.Duration(exp) * time.Second)
	token, err := iss.Signer.Sign(&satoken.Claims{
		Issuer: iss.Issuer, Subject: "system:serviceaccount:" + info.Namespace + ":" + sa.Name,
		Audience: audiences, IssuedAt: now.Unix(), NotBefore: now.Unix(), Expiry: expiry.Unix(),
		ID: string(uuid.NewUUID()), Kubernetes: priv,
	})
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	out := req.DeepCopy()
	out.Name, out.Namespace, out.CreationTimestamp = sa.Name, info.Namespace, metav1.NewTime(now)
	out.Spec.Audiences, out.Spec.ExpirationSeconds = audiences, &exp
	out.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(expiry)}
	s.writeObject(w, r, http.StatusCreated, t, out, gvAuthentication)
	return nil
}

// bindToken checks the object a token is bound to and records it (and a
// pod's node) in the claims.
func (s *Server) bindToken(r *http.Request, priv *satoken.PrivateClaims, ref *authenticationv1.BoundObjectReference, saName string) error {
	path := field.NewPath("spec", "boundObjectRef")
	if ref.APIVersion != "" && ref.APIVersion != "v1" {
		return apierrors.NewInvalid(tokenRequestGK, saName, field.ErrorList{field.NotSupported(path.Child("apiVersion"), ref.APIVersion, []string{"v1"})})
	}
	var gr schema.GroupResource
	switch ref.Kind {
	case "Pod":
		gr = schema.GroupResource{Resource: "pods"}
	case "Secret":
		gr = schema.GroupResource{Resource: "secrets"}
	default:
		return apierrors.NewInvalid(tokenRequestGK, saName, field.ErrorList{field.NotSupported(path.Child("kind"), ref.Kind, []string{"Pod", "Secret"})})
	}
	if ref.Name == "" {
		return apierrors.NewInvalid(tokenRequestGK, saName, field.ErrorList{field.Required(path.Child("name"), "")})
	}
	obj, err := s.store.Get(r.Context(), storage.Key(gr, priv.Namespace, ref.Name))
	if err != nil {
		return storageError(err, gr, ref.Name)
	}
	var uid string
	switch o := obj.(type) {
	case *corev1.Pod:
		uid = string(o.UID)
		if o.Spec.ServiceAccountName != saName {
			return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", saName))
		}
		priv.Pod = &satoken.Ref{Name: o.Name, UID: uid}
		if o.Spec.NodeName != "" {
			priv.Node = &satoken.Ref{Name: o.Spec.NodeName}
			if nobj, err := s.store.Get(r.Context(), storage.Key(schema.GroupResource{Resource: "nodes"}, "", o.Spec.NodeName)); err == nil {
				priv.Node.UID = string(nobj.(*corev1.Node).UID)
			} else if !errors.Is(err, storage.ErrNotFound) {
				return storageError(err, schema.GroupResource{Resource: "nodes"}, o.Spec.NodeName)
			}
		}
	case *corev1.Secret:
		uid = string(o.UID)
		priv.Secret = &satoken.Ref{Name: o.Name, UID: uid}
	}
	if ref.UID != "" && string(ref.UID) != uid {
		return apierrors.NewConflict(gr, ref.Name, fmt.Errorf(
			"the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return nil
}
