// Package openapi generates and serves the OpenAPI documents of the podkit
// API server: Swagger 2.0 at /openapi/v2 and OpenAPI 3.0 under /openapi/v3.
//
// It belongs to step 1 of the birth sequence: before kubectl POSTs a
// manifest it reads these documents to decide how to validate the object
// and, for an existing object, how to compute the patch it sends.
//
// Kubernetes generates its documents from the Go types with code
// generation inside k8s.io/kubernetes. This package builds equivalent ones
// at start-up by reflection over the k8s.io/api types: JSON field names and
// omitempty from struct tags, descriptions from the generated SwaggerDoc
// methods, definition names from OpenAPIModelName (io.k8s.api.core.v1.Pod),
// scalar encodings from OpenAPISchemaType/OpenAPISchemaFormat and
// OpenAPIV3OneOfTypes (Quantity, IntOrString, Time), patch strategies from
// the patchStrategy/patchMergeKey tags, and list and map semantics
// (+listType, +listMapKey, +mapType, +structType, invisible to reflection)
// from the structured-merge-diff schema client-go ships. Building the
// documents for two dozen resources takes about 100 ms, most of it parsing
// that schema; protobuf and gzip encodings are built on first request.
//
// # What kubectl needs
//
// Field validation (kubectl create, apply, replace; --validate defaults to
// strict). kubectl asks whether the server supports the fieldValidation
// query parameter; if so it sends fieldValidation=Strict and skips its own
// schema validation. cli-runtime's QueryParamVerifierV3 fetches the group
// version's v3 document, takes the first PATCH operation whose
// x-kubernetes-group-version-kind (a single {group, version, kind} map)
// matches, and looks for a query parameter named fieldValidation among the
// operation's own parameters (inline, or a $ref into components). Every
// PATCH of a kind, subresources included, therefore carries the parameter.
// The kind v1 List is never supported; a kind whose group version has no
// document counts as supported only when it is a CRD and Namespace's PATCH
// supports it. When the v3 lookup errors, kubectl falls back to the v2
// verifier, which does the same over /openapi/v2 (operation parameters or
// #/parameters references). kubectl 1.27 to 1.29 also parse the whole v2
// document into kube-openapi's proto models before that, and fail the
// command if it does not parse: every $ref must resolve, a $ref may carry a
// description but no type.
//
// Patch computation (client-side kubectl apply of an existing object).
// kubectl reads the v3 document of the object's group version, requires a
// PATCH operation for the kind whose requestBody lists
// application/strategic-merge-patch+json, finds the component schema whose
// x-kubernetes-group-version-kind list contains the kind, and walks it with
// strategicpatch.PatchMetaFromOpenAPIV3: properties by name, allOf[0] and
// $ref resolved, the x-kubernetes-patch-strategy and
// x-kubernetes-patch-merge-key extensions read from the property schema. A
// failure there prints a warning and falls back to the v2 models
// (LookupResource by the definitions' x-kubernetes-group-version-kind,
// PatchMetaFromOpenAPI, patch type from the PATCH operation's consumes),
// and then to the Go structs compiled into kubectl.
//
// Explain. kubectl 1.27 and later render explain from the v3 document with
// templates: the kind is taken from the x-kubernetes-group-version-kind of
// an operation on the resource's collection or item path, the schema is the
// component whose list contains exactly that map; field types are guessed
// from type, items, additionalProperties, allOf and the $ref's last name
// segment; -required- comes from required. --output=plaintext-openapiv2
// renders from the v2 models instead.
//
// Fetching. client-go asks for /openapi/v2 with Accept
// application/com.github.proto-openapi.spec.v2@v1.0+protobuf and decodes
// gnostic's openapi_v2.Document; the dotted spelling
// (...spec.v2.v1.0+protobuf) is accepted too and is what the response is
// labelled. /openapi/v3 returns {"paths":{"api/v1":{"serverRelativeURL":
// "/openapi/v3/api/v1?hash=..."}}}; the hash is the upper-case hex SHA-512
// of the JSON document and also its ETag. A hashed URL is served with
// Cache-Control: public, immutable, a stale hash is redirected (301) to the
// current one, and kubectl's HTTP cache revalidates the rest with
// If-None-Match. Documents are deterministic, so hashes survive restarts.
//
// # Limits
//
// Streaming and connect subresources (log, exec, attach, portforward,
// proxy), the deprecated /watch/ paths, enums and defaults are not
// described. Required fields follow the generator's rule for fields without
// markers (required unless omitempty) plus a small table of known
// exceptions (see requiredOverrides).
package openapi
