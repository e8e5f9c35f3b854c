// Package admission is step 3 of the birth sequence: after authentication and
// authorization, and before storage, every write passes the admission chain.
//
// A Chain runs every mutating Admitter in order (defaulting, namespace
// lifecycle, limit ranges, service accounts, priority, ...), then the REST
// layer runs the object's own validation, then the Chain runs every
// Validator (limit ranges, ..., quota last). The first error stops the
// request; plugins return Kubernetes API errors
// (k8s.io/apimachinery/pkg/api/errors) so the client sees the status code and
// message Kubernetes would send — Forbidden (403) for policy rejections,
// NotFound (404) for a missing namespace, Invalid (422) for bad fields. Any
// other error a plugin returns is turned into a 403 naming the plugin
// (`admission plugin "x" denied the request: ...`) that still unwraps to the
// plugin's error.
//
// The built-in plugins mirror Kubernetes' own: Defaulter (v1 defaults, see
// package defaults), NamespaceLifecycle, LimitRanger, ServiceAccount,
// Priority, DefaultTolerationSeconds and ResourceQuota. They read cluster
// objects straight from storage (storage.Store). NewBuiltins builds them all
// and Builtins.Chain orders them as Kubernetes does, with the caller's own
// plugins inserted where webhooks would run.
//
// For the REST layer, a write goes:
//
//	a := &admission.Attributes{Operation, Kind, Resource, Subresource, Namespace, Name, Object, OldObject, User, DryRun}
//	chain.Admit(ctx, a)     // may change a.Object
//	// generate metadata.name from generateName, run the object's validation
//	chain.Validate(ctx, a)  // must see the final name (ResourceQuota remembers the object by it)
//	err := store.Create(...)
//	chain.Finish(ctx, a, err)
//
// Users add their own stage by implementing Admitter or Validator (or
// wrapping a function in AdmitFunc / ValidateFunc), optionally Namer and
// Handler, and putting it in the chain, as the label-injector example does.
package admission
