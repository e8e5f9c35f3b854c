package encryption_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/podkit/podkit/apiserver/storage/encryption"
)

// Example encrypts a Secret's stored bytes with the first aesgcm key of an
// EncryptionConfiguration, as --encryption-provider-config does, and reads
// them back.
func Example() {
	cfg, err := encryption.ParseConfig([]byte(`
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ["secrets"]
    providers:
      - aesgcm:
          keys:
            - name: key2
              secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
            - name: key1
              secret: ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=
      - identity: {}
`))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	key := "/registry/secrets/default/db"
	stored, err := cfg.TransformToStorage(ctx, []byte("k8s\x00...protobuf Secret..."), key)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.HasPrefix(string(stored), "k8s:enc:aesgcm:v1:key2:"))
	plain, err := cfg.TransformFromStorage(ctx, stored, key)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", plain)
	// Output:
	// true
	// "k8s\x00...protobuf Secret..."
}
