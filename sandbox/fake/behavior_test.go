package fake

import (
	"net/netip"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/sandbox"
)

func TestMergedCommand(t *testing.T) {
	img := sandbox.ImageConfig{Entrypoint: []string{"/ep"}, Cmd: []string{"cmd1", "cmd2"}}
	cases := []struct {
		name          string
		img           sandbox.ImageConfig
		command, args []string
		want          []string
	}{
		{"image only", img, nil, nil, []string{"/ep", "cmd1", "cmd2"}},
		{"args replace cmd", img, nil, []string{"a"}, []string{"/ep", "a"}},
		{"command replaces both", img, []string{"/c"}, nil, []string{"/c"}},
		{"command and args", img, []string{"/c"}, []string{"a", "b"}, []string{"/c", "a", "b"}},
		{"cmd without entrypoint", sandbox.ImageConfig{Cmd: []string{"/bin/x"}}, nil, nil, []string{"/bin/x"}},
		{"nothing", sandbox.ImageConfig{}, nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := MergedCommand(&sandbox.ContainerConfig{ImageConfig: tc.img, Command: tc.command, Args: tc.args})
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestInterpret(t *testing.T) {
	limit := int64(16 << 20)
	limited := &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &limit}}
	sb := &sandbox.SandboxConfig{Pod: sandbox.PodMeta{Name: "web"}, Hostname: "web-host"}
	cases := []struct {
		name       string
		argv       []string
		stopSignal string
		resources  *specs.LinuxResources
		env        []string
		want       Behavior
	}{
		{"sleep forever", []string{"/bin/testbox", "sleep", "inf"}, "", nil, nil, Behavior{}},
		{"sleep without arg", []string{"testbox", "sleep"}, "", nil, nil, Behavior{}},
		{"sleep seconds", []string{"/bin/testbox", "sleep", "1.5"}, "", nil, nil, Behavior{RunFor: 1500 * time.Millisecond, Exits: true}},
		{"sleep zero", []string{"/bin/testbox", "sleep", "0"}, "", nil, nil, Behavior{Exits: true}},
		{"sleep bad", []string{"/bin/testbox", "sleep", "x"}, "", nil, nil, Behavior{Stderr: []string{`testbox: bad duration "x"`}, Exits: true, ExitCode: 2}},
		{"exit code", []string{"/bin/testbox", "exit", "3"}, "", nil, nil, Behavior{Exits: true, ExitCode: 3}},
		{"exit low byte", []string{"/bin/testbox", "exit", "257"}, "", nil, nil, Behavior{Exits: true, ExitCode: 1}},
		{"exit bad", []string{"/bin/testbox", "exit", "x"}, "", nil, nil, Behavior{Stderr: []string{`testbox: bad number "x"`}, Exits: true, ExitCode: 2}},
		{"print", []string{"/bin/testbox", "print", "hello", "world"}, "", nil, nil, Behavior{Stdout: []string{"hello world"}, Exits: true}},
		{"eprint", []string{"/bin/testbox", "eprint", "oops"}, "", nil, nil, Behavior{Stderr: []string{"oops"}, Exits: true}},
		{"without testbox", []string{"print", "x"}, "", nil, nil, Behavior{Stdout: []string{"x"}, Exits: true}},
		{"hostname", []string{"/bin/testbox", "hostname"}, "", nil, nil, Behavior{Stdout: []string{"web-host"}, Exits: true}},
		{"env", []string{"/bin/testbox", "env"}, "", nil, []string{"A=2", "B=3"}, Behavior{Stdout: []string{"A=2", "PATH=/bin", "B=3"}, Exits: true}},
		{"pwd", []string{"/bin/testbox", "pwd"}, "", nil, nil, Behavior{Stdout: []string{"/srv"}, Exits: true}},
		{"term-exit", []string{"/bin/testbox", "term-exit", "7"}, "", nil, nil, Behavior{Stdout: []string{"waiting for SIGTERM"}, ExitOnTerm: true, TermExitCode: 7}},
		{"term-exit other signal", []string{"/bin/testbox", "term-exit", "7"}, "SIGQUIT", nil, nil, Behavior{Stdout: []string{"waiting for SIGTERM"}}},
		{"ignore-term", []string{"/bin/testbox", "ignore-term"}, "15", nil, nil, Behavior{Stdout: []string{"ignoring SIGTERM"}, IgnoreTerm: true}},
		{"ignore-term other signal", []string{"/bin/testbox", "ignore-term"}, "INT", nil, nil, Behavior{Stdout: []string{"ignoring SIGTERM"}}},
		{"alloc over limit", []string{"/bin/testbox", "alloc", "64"}, "", limited, nil, Behavior{OOM: true}},
		{"alloc at limit", []string{"/bin/testbox", "alloc", "16"}, "", limited, nil, Behavior{Stdout: []string{"allocated 16 MiB"}}},
		{"alloc without limit", []string{"/bin/testbox", "alloc", "4096"}, "", nil, nil, Behavior{Stdout: []string{"allocated 4096 MiB"}}},
		{"usage", []string{"/bin/testbox"}, "", nil, nil, Behavior{Stderr: []string{"usage: testbox <command> [args...]"}, Exits: true, ExitCode: 2}},
		{"unknown runs forever", []string{"/bin/testbox", "listen", ":80"}, "", nil, nil, Behavior{}},
		{"other program runs forever", []string{"/usr/bin/nginx", "-g", "daemon off;"}, "", nil, nil, Behavior{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &sandbox.ContainerConfig{
				Command: tc.argv, Env: tc.env, Resources: tc.resources,
				ImageConfig: sandbox.ImageConfig{StopSignal: tc.stopSignal, Env: []string{"A=1", "PATH=/bin"}, WorkingDir: "/srv"},
			}
			assert.Equal(t, tc.want, Interpret(sb, cfg))
		})
	}
}

func TestParseSignal(t *testing.T) {
	cases := []struct {
		in   string
		want int
		ok   bool
	}{
		{"", 15, true}, {"SIGTERM", 15, true}, {"TERM", 15, true}, {"sigquit", 3, true},
		{"9", 9, true}, {"SIGRTMIN", 0, false}, {"0", 0, false}, {"65", 0, false}, {"NOPE", 0, false},
	}
	for _, tc := range cases {
		got, err := parseSignal(tc.in)
		if !tc.ok {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestIPAM(t *testing.T) {
	t.Run("round robin over a /29", func(t *testing.T) {
		m, err := newIPAM(netip.MustParsePrefix("10.1.2.0/29"))
		require.NoError(t, err)
		var got []string
		for range 5 { // .2 to .6: not the network, gateway or broadcast
			a, err := m.allocate()
			require.NoError(t, err)
			got = append(got, a.String())
		}
		assert.Equal(t, []string{"10.1.2.2", "10.1.2.3", "10.1.2.4", "10.1.2.5", "10.1.2.6"}, got)
		_, err = m.allocate()
		assert.Error(t, err, "full")
		m.release(netip.MustParseAddr("10.1.2.4"))
		m.release(netip.MustParseAddr("10.1.2.4"))
		a, err := m.allocate()
		require.NoError(t, err)
		assert.Equal(t, "10.1.2.4", a.String())
	})
	t.Run("released addresses wait for the wrap", func(t *testing.T) {
		m, err := newIPAM(netip.MustParsePrefix("10.1.2.0/24"))
		require.NoError(t, err)
		a, _ := m.allocate()
		m.release(a)
		b, _ := m.allocate()
		assert.NotEqual(t, a, b)
	})
	t.Run("IPv6", func(t *testing.T) {
		m, err := newIPAM(netip.MustParsePrefix("fd00:1::/64"))
		require.NoError(t, err)
		a, err := m.allocate()
		require.NoError(t, err)
		assert.Equal(t, "fd00:1::2", a.String())
	})
	t.Run("too small", func(t *testing.T) {
		_, err := newIPAM(netip.MustParsePrefix("10.1.2.0/30")) // .2 only
		require.NoError(t, err)
		_, err = newIPAM(netip.MustParsePrefix("10.1.2.0/31"))
		assert.Error(t, err)
	})
}
