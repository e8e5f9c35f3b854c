package plugin_test

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/cni/netns"
)

// BenchmarkNetworkSetup measures what a pod waits for before its network
// is ready — a fresh network namespace, the veth pair, the address and the
// routes — for the built-in bridge and for the reference bridge and
// host-local plugins exec'd through libcni, in the same run. It reports
// the median and 99th percentile per setup; teardown is not timed.
//
//	go test -run '^$' -bench NetworkSetup -benchtime 300x ./cni/plugin/
func BenchmarkNetworkSetup(b *testing.B) {
	b.Run("builtin-bridge", func(b *testing.B) {
		benchSetup(b, func(b *testing.B, env *cnitest.Env) cni.Networker {
			br, err := cni.NewBridge(cni.BridgeConfig{PodCIDR: env.PodCIDR, StateDir: env.StateDir},
				cni.WithNodeNetNS(env.NodeNS.Path()), cni.WithBridgeName(env.BridgeName))
			require.NoError(b, err)
			b.Cleanup(func() {
				require.NoError(b, br.Cleanup(context.Background()))
				require.NoError(b, br.Close())
			})
			return br
		})
	})
	b.Run("libcni-reference-bridge", func(b *testing.B) {
		benchSetup(b, func(b *testing.B, env *cnitest.Env) cni.Networker {
			return newPluginNetworker(b, env)
		})
	})
}

func benchSetup(b *testing.B, factory func(*testing.B, *cnitest.Env) cni.Networker) {
	env := cnitest.NewEnv(b)
	// A /16 so long runs never exhaust the range.
	env.PodCIDR = netip.PrefixFrom(env.PodCIDR.Addr(), 16).Masked()
	n := factory(b, env)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	nsLat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		ns, err := netns.New(env.RunDir, "bench-"+cnitest.RandomHex(6))
		if err != nil {
			b.Fatal(err)
		}
		nsLat = append(nsLat, time.Since(start))
		a := env.Attachment(ns)
		if _, err := n.Setup(ctx, a); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		if err := n.Teardown(ctx, a); err != nil {
			b.Fatal(err)
		}
		if err := ns.Remove(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	slices.Sort(nsLat)
	b.ReportMetric(float64(nsLat[len(nsLat)/2].Microseconds()), "netns-p50-µs")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
