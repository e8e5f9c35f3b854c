package openapi

import (
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// param is a path or query parameter, independent of the OpenAPI version.
type param struct {
	name     string
	in       string // path or query
	typ      string // string, integer, boolean
	desc     string
	required bool
}

func query(name, typ, desc string) param {
	return param{name: name, in: "query", typ: typ, desc: desc}
}

var (
	paramNamespace = param{name: "namespace", in: "path", typ: "string", required: true,
		desc: "object name and auth scope, such as for teams and projects"}
	paramPretty = query("pretty", "string",
		"If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).")

	paramAllowWatchBookmarks = query("allowWatchBookmarks", "boolean",
		"allowWatchBookmarks requests watch events of type BOOKMARK. Servers that do not implement bookmarks may ignore this flag. Ignored unless watch is set.")
	paramContinue = query("continue", "string",
		"The continue token returned with a previous, limited list result, to fetch the next chunk of the same consistent snapshot.")
	paramFieldSelector = query("fieldSelector", "string",
		"A selector to restrict the list of returned objects by their fields. Defaults to everything.")
	paramLabelSelector = query("labelSelector", "string",
		"A selector to restrict the list of returned objects by their labels. Defaults to everything.")
	paramLimit = query("limit", "integer",
		"limit is the maximum number of items to return for a list call; when more remain, the server sets the continue field of the list metadata.")
	paramResourceVersion = query("resourceVersion", "string",
		"resourceVersion sets a constraint on what resource versions a request may be served from. Defaults to unset.")
	paramResourceVersionMatch = query("resourceVersionMatch", "string",
		"resourceVersionMatch determines how resourceVersion is applied to list calls (Exact or NotOlderThan). Defaults to unset.")
	paramSendInitialEvents = query("sendInitialEvents", "boolean",
		"sendInitialEvents=true may be set together with watch=true: the watch stream then begins with synthetic events for the current state of all objects, followed by a bookmark.")
	paramTimeoutSeconds = query("timeoutSeconds", "integer",
		"Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.")
	paramWatch = query("watch", "boolean",
		"Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.")

	paramDryRun = query("dryRun", "string",
		"When present, indicates that modifications should not be persisted. The only valid value is All: all dry run stages are processed.")
	paramFieldManager = query("fieldManager", "string",
		"fieldManager is a name associated with the actor or entity that is making these changes. At most 128 printable characters.")
	paramFieldValidation = query("fieldValidation", "string",
		"fieldValidation instructs the server how to handle objects in the request containing unknown or duplicate fields: Ignore drops them silently, Warn drops them and returns a warning for each, Strict fails the request.")
	paramForce = query("force", "boolean",
		"Force is going to \"force\" Apply requests: the caller re-acquires fields owned by other managers. Must be unset for non-apply patch requests.")

	paramGracePeriodSeconds = query("gracePeriodSeconds", "integer",
		"The duration in seconds before the object should be deleted. Must be non-negative; zero means delete immediately. Defaults to the object's own grace period.")
	paramIgnoreStoreReadError = query("ignoreStoreReadErrorWithClusterBreakingPotential", "boolean",
		"if set to true, an object that cannot be read from storage (corrupt or undecryptable) is removed without running the normal deletion flow. Dangerous.")
	paramOrphanDependents = query("orphanDependents", "boolean",
		"Deprecated: use propagationPolicy. Whether dependent objects should be orphaned.")
	paramPropagationPolicy = query("propagationPolicy", "string",
		"Whether and how garbage collection will be performed: Orphan, Background or Foreground.")
)

var (
	listParams = []param{paramAllowWatchBookmarks, paramContinue, paramFieldSelector, paramLabelSelector, paramLimit,
		paramResourceVersion, paramResourceVersionMatch, paramSendInitialEvents, paramTimeoutSeconds, paramWatch}
	writeParams  = []param{paramDryRun, paramFieldManager, paramFieldValidation}
	patchParams  = []param{paramDryRun, paramFieldManager, paramFieldValidation, paramForce}
	deleteParams = []param{paramDryRun, paramGracePeriodSeconds, paramIgnoreStoreReadError, paramOrphanDependents,
		paramPropagationPolicy}
	deleteCollectionParams = []param{paramContinue, paramDryRun, paramFieldSelector, paramGracePeriodSeconds,
		paramIgnoreStoreReadError, paramLabelSelector, paramLimit, paramOrphanDependents, paramPropagationPolicy,
		paramResourceVersion, paramResourceVersionMatch, paramSendInitialEvents, paramTimeoutSeconds}
)

func nameParam(kind string) param {
	return param{name: "name", in: "path", typ: "string", required: true, desc: "name of the " + kind}
}

func (p param) v2() spec.Parameter {
	return spec.Parameter{
		ParamProps:   spec.ParamProps{Name: p.name, In: p.in, Description: p.desc, Required: p.required},
		SimpleSchema: spec.SimpleSchema{Type: p.typ},
		CommonValidations: spec.CommonValidations{
			UniqueItems: true,
		},
	}
}

func (p param) v3() *spec3.Parameter {
	s := primitive(p.typ, "")
	s.UniqueItems = true
	return &spec3.Parameter{ParameterProps: spec3.ParameterProps{
		Name: p.name, In: p.in, Description: p.desc, Required: p.required, Schema: &s,
	}}
}
