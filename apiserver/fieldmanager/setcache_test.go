package fieldmanager

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

func TestSetCacheKeepsTwoGenerations(t *testing.T) {
	var c setCache
	raw := func(i int) []byte { return fmt.Appendf(nil, `{"f:%d":{}}`, i) }
	hot := &fieldpath.Set{}
	c.put([]byte("hot"), hot)
	for i := range 3 * setCacheGeneration {
		c.put(raw(i), &fieldpath.Set{})
		require.Same(t, hot, c.get([]byte("hot")), "a set in use stays")
	}
	assert.Nil(t, c.get(raw(0)), "an old set goes")
	assert.NotNil(t, c.get(raw(3*setCacheGeneration-1)))
	assert.LessOrEqual(t, len(c.cur)+len(c.old), 2*setCacheGeneration)
}

func TestStableSet(t *testing.T) {
	m, _ := newManager(t)
	p := m.plan(podGVK, "")
	canonical, err := fieldpath.NewSet(fieldpath.MakePathOrDie("spec", "nodeName")).ToJSON()
	require.NoError(t, err)
	atomicChild, err := fieldpath.NewSet(fieldpath.MakePathOrDie("spec", "tolerations", "x")).ToJSON()
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		raw    string
		stable bool
	}{
		{"canonical", string(canonical), true},
		{"white space", `{"f:spec": {"f:nodeName":{}}}`, false},
		{"keys out of order", `{"f:status":{},"f:spec":{}}`, false},
		{"not JSON", `{"f:spec"`, false},
		{"needs reconciling", string(atomicChild), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, ok := p.stableSet([]byte(tc.raw))
			assert.Equal(t, tc.stable, ok)
			if ok {
				again, _ := p.stableSet([]byte(tc.raw))
				assert.Same(t, set, again, "decoded once")
			}
		})
	}
	// The cache belongs to the kind: the status plan shares the pods' one.
	_, ok := m.plan(podGVK, "status").sets.cur[string(canonical)]
	assert.True(t, ok)
	_, ok = m.plan(corev1.SchemeGroupVersion.WithKind("Node"), "").sets.cur[string(canonical)]
	assert.False(t, ok)
}
