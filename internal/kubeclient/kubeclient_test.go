package kubeclient

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/rest"
)

func TestProtobuf(t *testing.T) {
	rc := &rest.Config{Host: "https://127.0.0.1:6443", QPS: -1}
	pb := Protobuf(rc)
	assert.Equal(t, "application/vnd.kubernetes.protobuf", pb.ContentType)
	assert.Equal(t, "application/vnd.kubernetes.protobuf,application/json", pb.AcceptContentTypes)
	assert.Equal(t, rc.Host, pb.Host)
	assert.Empty(t, rc.ContentType, "the original is left as it was")
}
