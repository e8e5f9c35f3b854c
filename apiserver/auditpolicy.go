package apiserver

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// AuditPolicyFile is a Kubernetes audit policy (audit.k8s.io/v1 Policy,
// kube-apiserver's --audit-policy-file): the first rule matching a request
// gives its level, none matching gives None. Stages and omitStages are
// accepted and ignored: podkit records the ResponseComplete stage only.
type AuditPolicyFile struct {
	Rules []AuditPolicyRule `json:"rules"`
}

// AuditPolicyRule is one rule; empty lists match everything.
type AuditPolicyRule struct {
	Level           AuditLevel           `json:"level"`
	Users           []string             `json:"users,omitempty"`
	UserGroups      []string             `json:"userGroups,omitempty"`
	Verbs           []string             `json:"verbs,omitempty"`
	Resources       []AuditGroupResource `json:"resources,omitempty"`
	Namespaces      []string             `json:"namespaces,omitempty"`
	NonResourceURLs []string             `json:"nonResourceURLs,omitempty"`
	OmitStages      []string             `json:"omitStages,omitempty"`
}

// AuditGroupResource selects resources of a group: "pods", "pods/log",
// "*/status", "*"; ResourceNames narrows to objects.
type AuditGroupResource struct {
	Group         string   `json:"group"`
	Resources     []string `json:"resources,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// policyDocument is the file's top level.
type policyDocument struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	OmitStages []string          `json:"omitStages,omitempty"`
	Rules      []AuditPolicyRule `json:"rules"`
	// OmitManagedFields is accepted for compatibility.
	OmitManagedFields bool `json:"omitManagedFields,omitempty"`
}

// LoadAuditPolicy reads an audit policy file.
func LoadAuditPolicy(path string) (*AuditPolicyFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit policy: %w", err)
	}
	p, err := ParseAuditPolicy(data)
	if err != nil {
		return nil, fmt.Errorf("audit policy %s: %w", path, err)
	}
	return p, nil
}

// ParseAuditPolicy parses an audit.k8s.io/v1 Policy (YAML or JSON).
func ParseAuditPolicy(data []byte) (*AuditPolicyFile, error) {
	var doc policyDocument
	if err := yaml.UnmarshalStrict(data, &doc); err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	if doc.Kind != "Policy" || !strings.HasPrefix(doc.APIVersion, "audit.k8s.io/") {
		return nil, fmt.Errorf("want kind Policy of audit.k8s.io/v1, got %s %s", doc.Kind, doc.APIVersion)
	}
	for i, r := range doc.Rules {
		if _, ok := ParseAuditLevel(string(r.Level)); !ok {
			return nil, fmt.Errorf("rules[%d]: level %q: want None, Metadata, Request or RequestResponse", i, r.Level)
		}
		if len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.Namespaces) > 0) {
			return nil, fmt.Errorf("rules[%d]: nonResourceURLs cannot be combined with resources or namespaces", i)
		}
	}
	return &AuditPolicyFile{Rules: doc.Rules}, nil
}

// Level returns the level of the first matching rule, None if none does.
func (p *AuditPolicyFile) Level(a *AuditAttributes) AuditLevel {
	for i := range p.Rules {
		if p.Rules[i].matches(a) {
			return p.Rules[i].Level
		}
	}
	return AuditNone
}

func (r *AuditPolicyRule) matches(a *AuditAttributes) bool {
	if len(r.Users) > 0 && (a.User == nil || !slices.Contains(r.Users, a.User.GetName())) {
		return false
	}
	if len(r.UserGroups) > 0 && (a.User == nil || !slices.ContainsFunc(a.User.GetGroups(), func(g string) bool { return slices.Contains(r.UserGroups, g) })) {
		return false
	}
	if len(r.Verbs) > 0 && !slices.Contains(r.Verbs, a.Verb) {
		return false
	}
	if len(r.NonResourceURLs) > 0 {
		return !a.ResourceRequest && slices.ContainsFunc(r.NonResourceURLs, func(u string) bool {
			if prefix, ok := strings.CutSuffix(u, "*"); ok {
				return strings.HasPrefix(a.Path, prefix)
			}
			return a.Path == u
		})
	}
	if len(r.Resources) > 0 || len(r.Namespaces) > 0 {
		if !a.ResourceRequest {
			return false
		}
	}
	if len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, a.Namespace) {
		return false
	}
	if len(r.Resources) > 0 && !slices.ContainsFunc(r.Resources, func(gr AuditGroupResource) bool { return gr.matches(a) }) {
		return false
	}
	return true
}

func (gr *AuditGroupResource) matches(a *AuditAttributes) bool {
	if gr.Group != a.APIGroup && gr.Group != "*" {
		return false
	}
	if len(gr.ResourceNames) > 0 && !slices.Contains(gr.ResourceNames, a.Name) {
		return false
	}
	if len(gr.Resources) == 0 {
		return true
	}
	full := a.Resource
	if a.Subresource != "" {
		full += "/" + a.Subresource
	}
	for _, res := range gr.Resources {
		switch {
		case res == "*" || res == full:
			return true
		case res == "*/*" && a.Subresource != "":
			return true
		case strings.HasPrefix(res, "*/") && a.Subresource != "" && res[2:] == a.Subresource:
			return true
		case strings.HasSuffix(res, "/*") && a.Subresource != "" && res[:len(res)-2] == a.Resource:
			return true
		}
	}
	return false
}
