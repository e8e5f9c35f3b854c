package openapi

import (
	"sort"
	"strconv"
	"strings"
)

// Media types of the OpenAPI endpoints. kube-apiserver accepts both
// spellings of the protobuf types (client-go asks for the one with "@")
// and answers with the dotted one.
const (
	mimeJSON      = "application/json"
	mimeV2PB      = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	mimeV2PBOld   = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	mimeV3PB      = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
	mimeV3PBOld   = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
	headerVary    = "Vary"
	headerETag    = "Etag"
	headerEncode  = "Content-Encoding"
	headerCType   = "Content-Type"
	headerAccept  = "Accept"
	headerAcceptE = "Accept-Encoding"
)

// offer is a representation the server can produce for an Accept clause.
type offer struct {
	mediaType string // what the client may ask for
	returned  string // the Content-Type answered
	protobuf  bool
}

var (
	v2Offers = []offer{{mimeJSON, mimeJSON, false}, {mimeV2PBOld, mimeV2PB, true}, {mimeV2PB, mimeV2PB, true}}
	v3Offers = []offer{{mimeJSON, mimeJSON, false}, {mimeV3PB, mimeV3PB, true}, {mimeV3PBOld, mimeV3PB, true}}
)

type acceptClause struct {
	typ, sub string
	q        float64
}

// parseAccept splits an Accept header into media ranges ordered by
// preference (q, then order of appearance). Clauses with q=0 are dropped.
// An empty header accepts anything.
func parseAccept(h string) []acceptClause {
	if strings.TrimSpace(h) == "" {
		return []acceptClause{{"*", "*", 1}}
	}
	var out []acceptClause
	for _, part := range strings.Split(h, ",") {
		fields := strings.Split(part, ";")
		mr := strings.TrimSpace(fields[0])
		typ, sub, ok := strings.Cut(mr, "/")
		if !ok || typ == "" || sub == "" {
			continue
		}
		c := acceptClause{typ: strings.ToLower(typ), sub: strings.ToLower(sub), q: 1}
		for _, p := range fields[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				if q, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					c.q = q
				}
			}
		}
		if c.q > 0 {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].q > out[j].q })
	return out
}

// negotiate picks the first offer matching the most preferred clause.
func negotiate(accept string, offers []offer) (offer, bool) {
	for _, c := range parseAccept(accept) {
		for _, o := range offers {
			typ, sub, _ := strings.Cut(o.mediaType, "/")
			if (c.typ == typ || c.typ == "*") && (c.sub == sub || c.sub == "*") {
				return o, true
			}
		}
	}
	return offer{}, false
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip.
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		fields := strings.Split(part, ";")
		coding := strings.ToLower(strings.TrimSpace(fields[0]))
		if coding != "gzip" && coding != "x-gzip" {
			continue
		}
		q := 1.0
		for _, p := range fields[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		return q > 0
	}
	return false
}
