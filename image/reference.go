package image

import (
	"fmt"
	"regexp"
	"strings"
)

const (
	// DefaultDomain is the registry of references without one.
	DefaultDomain = "docker.io"
	// DefaultTag is the tag of references with neither tag nor digest.
	DefaultTag    = "latest"
	legacyDomain  = "index.docker.io"
	officialRepo  = "library/"
	maxNameLength = 255
)

// The reference grammar of the distribution project (Docker, containerd).
var (
	pathComponentRe = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	domainRe        = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$`)
	tagRe           = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestRe        = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`)
	sha256Re        = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
	hex64Re         = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// Reference is a normalised image reference: docker.io/library/nginx:latest.
// When a digest is given the tag is dropped, like containerd does: the
// digest alone names the content.
type Reference struct {
	Domain string // registry host[:port], "docker.io" by default
	Path   string // repository path, "library/nginx"
	Tag    string // "" when Digest is set
	Digest string // "sha256:<hex>" or ""
}

// ParseReference parses and normalises an image reference the way the
// kubelet and containerd do: "nginx" is docker.io/library/nginx:latest,
// "index.docker.io" is docker.io, a first component with a dot, a colon or
// "localhost" is a registry. Errors wrap ErrInvalidImageName.
func ParseReference(s string) (Reference, error) {
	invalid := func(why string) (Reference, error) {
		return Reference{}, fmt.Errorf("couldn't parse image name %q: %s: %w", s, why, ErrInvalidImageName)
	}
	if s == "" {
		return invalid("empty reference")
	}
	if s != strings.TrimSpace(s) {
		return invalid("surrounding whitespace")
	}
	rest := s
	var r Reference
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		r.Digest = rest[i+1:]
		rest = rest[:i]
		if !digestRe.MatchString(r.Digest) {
			return invalid("invalid digest format")
		}
		if strings.HasPrefix(r.Digest, "sha256:") && !sha256Re.MatchString(r.Digest) {
			return invalid("invalid sha256 digest")
		}
	}
	// A tag follows the last colon after the last slash.
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		tag := rest[i+1:]
		rest = rest[:i]
		if !tagRe.MatchString(tag) {
			return invalid("invalid tag format")
		}
		if r.Digest == "" {
			r.Tag = tag
		}
	}
	if rest == "" {
		return invalid("empty repository name")
	}
	if len(rest) > maxNameLength {
		return invalid(fmt.Sprintf("repository name longer than %d characters", maxNameLength))
	}
	domain, path := splitDomain(rest)
	if !domainRe.MatchString(domain) {
		return invalid("invalid registry host")
	}
	if hex64Re.MatchString(rest) {
		return invalid("cannot specify a 64-byte hexadecimal string as repository")
	}
	for _, c := range strings.Split(path, "/") {
		if !pathComponentRe.MatchString(c) {
			if strings.ToLower(c) == c {
				return invalid("invalid reference format")
			}
			return invalid("repository name must be lowercase")
		}
	}
	r.Domain, r.Path = domain, path
	if r.Tag == "" && r.Digest == "" {
		r.Tag = DefaultTag
	}
	return r, nil
}

// splitDomain separates the registry from the repository path and applies
// Docker Hub's defaults.
func splitDomain(name string) (domain, path string) {
	first, rest, found := strings.Cut(name, "/")
	if !found || (!strings.ContainsAny(first, ".:") && first != "localhost" && strings.ToLower(first) == first) {
		domain, path = DefaultDomain, name
	} else {
		domain, path = first, rest
	}
	if domain == legacyDomain {
		domain = DefaultDomain
	}
	if domain == DefaultDomain && !strings.Contains(path, "/") {
		path = officialRepo + path
	}
	return domain, path
}

// Name is the repository with its registry: docker.io/library/nginx.
func (r Reference) Name() string { return r.Domain + "/" + r.Path }

// String is the full normalised reference.
func (r Reference) String() string {
	s := r.Name()
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// Familiar is the short form Docker prints: nginx:latest,
// myorg/app:1, registry:5000/app:1.
func (r Reference) Familiar() string {
	name := r.Name()
	if r.Domain == DefaultDomain {
		name = strings.TrimPrefix(r.Path, officialRepo)
	}
	if r.Tag != "" {
		name += ":" + r.Tag
	}
	if r.Digest != "" {
		name += "@" + r.Digest
	}
	return name
}

// IsLatest reports whether the reference names the tag "latest" (the
// kubelet defaults the pull policy of such images to Always).
func (r Reference) IsLatest() bool { return r.Digest == "" && r.Tag == DefaultTag }

// WithDigest returns the reference to the same repository by digest.
func (r Reference) WithDigest(digest string) Reference {
	return Reference{Domain: r.Domain, Path: r.Path, Digest: digest}
}
