package watchcache

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A prefixSet visits exactly the watchers a prefix test over every watcher
// finds, through random adds and removes (also by the visit's callback,
// as a dropped watcher is), for prefixes of every shape: "", ones ending
// or not in "/", whole keys, prefixes longer than the key.
func TestPrefixSetVisitsWhatAScanFinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	prefixes := []string{"", "/", "/registry/", "/registry/pods/", "/registry/pods/ns/", "/registry/pods/ns/a",
		"/registry/pods/ns/ab", "/registry/pods/n", "/registry/apps/deployments/", "/registry/events/ns/",
		"/registry/pods/ns/a/too-long"}
	keys := []string{"/registry/pods/ns/a", "/registry/pods/ns/ab", "/registry/pods/other/a", "/registry/apps/deployments/ns/d",
		"/registry/events/ns/e.1", "/x"}
	set := prefixSet{byPrefix: map[string]map[*watcher]struct{}{}}
	all := map[*watcher]bool{}
	for step := range 3000 {
		switch op := rng.IntN(10); {
		case op < 4 || len(all) == 0:
			w := &watcher{prefix: prefixes[rng.IntN(len(prefixes))]}
			set.add(w)
			all[w] = true
		case op < 6:
			for w := range all {
				require.True(t, set.remove(w))
				require.False(t, set.remove(w), "removed twice")
				delete(all, w)
				break
			}
		default:
			key := keys[rng.IntN(len(keys))]
			want := map[*watcher]bool{}
			for w := range all {
				if strings.HasPrefix(key, w.prefix) {
					want[w] = true
				}
			}
			got := map[*watcher]bool{}
			drop := rng.IntN(3) == 0
			set.visit(key, func(w *watcher) {
				require.False(t, got[w], "step %d: visited twice", step)
				got[w] = true
				if drop && rng.IntN(2) == 0 {
					require.True(t, set.remove(w))
					delete(all, w)
				}
			})
			require.Equal(t, want, got, "step %d key %s", step, key)
		}
	}
}
