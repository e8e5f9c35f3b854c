package defaults

import (
	"regexp"

	corev1 "k8s.io/api/core/v1"
)

// PullPolicyFor returns the imagePullPolicy Kubernetes picks for an image
// reference that does not state one: Always when the reference names the
// "latest" tag, explicitly or by naming no tag and no digest; IfNotPresent
// otherwise, including for references that do not parse.
func PullPolicyFor(image string) corev1.PullPolicy {
	if ImageTag(image) == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// ImageTag returns the tag an image reference resolves to: its explicit
// tag, "latest" when it has neither tag nor digest, "" for a digest-only
// reference or a reference that is not valid (docker reference grammar).
func ImageTag(image string) string {
	m := imageRef.FindStringSubmatch(image)
	if m == nil {
		return ""
	}
	name, tag, digest := m[1], m[2], m[3]
	if len(name) > maxImageNameLen {
		return ""
	}
	if tag == "" && digest == "" {
		return "latest"
	}
	return tag
}

// maxImageNameLen is the longest repository name (domain and path) the
// docker reference grammar accepts.
const maxImageNameLen = 255

// The docker/distribution reference grammar, written out:
//
//	reference  := name [ ":" tag ] [ "@" digest ]
//	name       := [ domain "/" ] component ( "/" component )*
//	domain     := host [ ":" port ]   (host: DNS labels joined by ".", or [ipv6])
//	component  := [a-z0-9]+ ( separator [a-z0-9]+ )*   separator := "." | "_" | "__" | "-"+
//	tag        := [\w][\w.-]{0,127}
//	digest     := algorithm ":" hex{32,}
var imageRef = func() *regexp.Regexp {
	const (
		label     = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		host      = `(?:` + label + `(?:\.` + label + `)*|\[[a-fA-F0-9:]+\])`
		domain    = host + `(?::[0-9]+)?`
		component = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
		path      = component + `(?:/` + component + `)*`
		name      = `(?:` + domain + `/)?` + path
		tag       = `[\w][\w.-]{0,127}`
		digest    = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
	)
	return regexp.MustCompile(`^(` + name + `)(?::(` + tag + `))?(?:@(` + digest + `))?$`)
}()
