package fieldmanager

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestManagerName(t *testing.T) {
	long := strings.Repeat("x", 200)
	tests := []struct {
		name, fieldManager, userAgent, want string
	}{
		{"explicit", "kubectl-client-side-apply", kubectlUA, "kubectl-client-side-apply"},
		{"kubectl user agent", "", kubectlUA, "kubectl"},
		{"client-go default", "", "main.test/v0.0.0 (linux/amd64) kubernetes/$Format", "main.test"},
		{"no slash", "", "curl", "curl"},
		{"empty", "", "", ""},
		{"unprintable dropped", "", "my\x00tool\n/1.0", "mytool"},
		{"capped at 128 bytes", "", long + "/1", long[:128]},
		{"multi-byte rune not split", "", strings.Repeat("x", 127) + "é/1", strings.Repeat("x", 127)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ManagerName(tt.fieldManager, tt.userAgent))
		})
	}
}

func TestValidateOptions(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"apply without manager", ValidatePatchOptions(&metav1.PatchOptions{}, types.ApplyYAMLPatchType),
			`PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`},
		{"cbor apply without manager", ValidatePatchOptions(&metav1.PatchOptions{}, types.ApplyCBORPatchType),
			`PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`},
		{"force on a merge patch", ValidatePatchOptions(&metav1.PatchOptions{Force: ptr.To(true)}, types.MergePatchType),
			`PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch`},
		{"valid apply", ValidatePatchOptions(&metav1.PatchOptions{FieldManager: "kubectl", Force: ptr.To(true)}, types.ApplyYAMLPatchType), ""},
		{"valid strategic patch", ValidatePatchOptions(&metav1.PatchOptions{}, types.StrategicMergePatchType), ""},
		{"create with a long manager", ValidateCreateOptions(&metav1.CreateOptions{FieldManager: strings.Repeat("m", 129)}),
			`CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes`},
		{"update with bad dryRun", ValidateUpdateOptions(&metav1.UpdateOptions{DryRun: []string{"Some"}}),
			`UpdateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All"`},
		{"valid create", ValidateCreateOptions(&metav1.CreateOptions{FieldManager: "kubectl-create"}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == "" {
				assert.NoError(t, tt.err)
				return
			}
			require.Error(t, tt.err)
			assert.Equal(t, tt.want, tt.err.Error())
			assert.ErrorIs(t, tt.err, ErrInvalidOptions)
			assert.True(t, apierrors.IsInvalid(tt.err))
			var st *apierrors.StatusError
			require.ErrorAs(t, tt.err, &st)
			assert.Equal(t, int32(http.StatusUnprocessableEntity), st.ErrStatus.Code)
		})
	}
}
