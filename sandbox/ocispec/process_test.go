package ocispec

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/sandbox"
)

func TestCommand(t *testing.T) {
	image := sandbox.ImageConfig{Entrypoint: []string{"/entry", "-e"}, Cmd: []string{"cmd", "-c"}}
	tests := []struct {
		name          string
		image         sandbox.ImageConfig
		command, args []string
		want          []string
		wantErr       bool
	}{
		{name: "neither: image entrypoint and cmd", image: image, want: []string{"/entry", "-e", "cmd", "-c"}},
		{name: "command only: image ignored", image: image, command: []string{"/bin/sh"}, want: []string{"/bin/sh"}},
		{name: "args only: image entrypoint and args", image: image, args: []string{"x", "y"}, want: []string{"/entry", "-e", "x", "y"}},
		{name: "both: command and args", image: image, command: []string{"/bin/sh"}, args: []string{"-c", "true"}, want: []string{"/bin/sh", "-c", "true"}},
		{name: "image cmd only", image: sandbox.ImageConfig{Cmd: []string{"/bin/app"}}, want: []string{"/bin/app"}},
		{name: "args only without entrypoint", image: sandbox.ImageConfig{Cmd: []string{"/bin/app"}}, args: []string{"/bin/other"}, want: []string{"/bin/other"}},
		{name: "reset entrypoint counts as none", image: sandbox.ImageConfig{Entrypoint: []string{""}, Cmd: []string{"/bin/app"}}, want: []string{"/bin/app"}},
		{name: "nothing at all", wantErr: true},
		{name: "reset entrypoint and no cmd", image: sandbox.ImageConfig{Entrypoint: []string{""}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &sandbox.ContainerConfig{Name: "app", ImageConfig: tt.image, Command: tt.command, Args: tt.args}
			got, err := Command(c)
			if tt.wantErr {
				require.ErrorIs(t, err, sandbox.ErrInvalid)
				assert.ErrorContains(t, err, "no command specified")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestCommandDoesNotAliasInputs(t *testing.T) {
	c := &sandbox.ContainerConfig{Name: "app", Command: make([]string, 1, 8), Args: []string{"a"}}
	c.Command[0] = "/bin/x"
	got, err := Command(c)
	require.NoError(t, err)
	assert.Equal(t, []string{"/bin/x", "a"}, got)
	got[0] = "changed"
	assert.Equal(t, []string{"/bin/x"}, c.Command)
	assert.Equal(t, "", c.Command[:2][1], "args must not be written into the command's spare capacity")
}

func TestEnv(t *testing.T) {
	defPath := "PATH=" + DefaultPath
	tests := []struct {
		name             string
		image, container []string
		hostname         string
		want             []string
	}{
		{name: "defaults only", hostname: "pod", want: []string{defPath, "HOSTNAME=pod"}},
		{name: "no hostname", want: []string{defPath}},
		{name: "image PATH replaces default in place", image: []string{"PATH=/bin", "A=1"}, hostname: "h",
			want: []string{"PATH=/bin", "HOSTNAME=h", "A=1"}},
		{name: "container overrides image by name", image: []string{"A=1", "B=2"}, container: []string{"B=3", "C=4"}, hostname: "h",
			want: []string{defPath, "HOSTNAME=h", "A=1", "B=3", "C=4"}},
		{name: "container overrides HOSTNAME and PATH", container: []string{"HOSTNAME=mine", "PATH=/x"}, hostname: "h",
			want: []string{"PATH=/x", "HOSTNAME=mine"}},
		{name: "image overrides HOSTNAME", image: []string{"HOSTNAME=img"}, hostname: "h",
			want: []string{defPath, "HOSTNAME=img"}},
		{name: "bare name unsets", image: []string{"A=1", "B=2"}, container: []string{"A"},
			want: []string{defPath, "B=2"}},
		{name: "empty value is kept", container: []string{"E="}, want: []string{defPath, "E="}},
		{name: "value with equals", container: []string{"Q=a=b"}, want: []string{defPath, "Q=a=b"}},
		{name: "repeated container variable keeps the last", container: []string{"A=1", "A=2"}, want: []string{defPath, "A=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			image := append([]string(nil), tt.image...)
			assert.Equal(t, tt.want, Env(tt.image, tt.container, tt.hostname))
			assert.Equal(t, image, tt.image, "image env must not be modified")
		})
	}
}

func TestParseSignal(t *testing.T) {
	tests := []struct {
		in      string
		want    syscall.Signal
		wantErr bool
	}{
		{in: "", want: syscall.SIGTERM},
		{in: "SIGTERM", want: syscall.SIGTERM},
		{in: "TERM", want: syscall.SIGTERM},
		{in: "term", want: syscall.SIGTERM},
		{in: "SigQuit", want: syscall.SIGQUIT},
		{in: "15", want: syscall.SIGTERM},
		{in: "9", want: syscall.SIGKILL},
		{in: "SIGKILL", want: syscall.SIGKILL},
		{in: "SIGUSR1", want: syscall.SIGUSR1},
		{in: "WINCH", want: syscall.SIGWINCH},
		{in: "SIGPWR", want: syscall.SIGPWR},
		{in: "SIGIOT", want: syscall.SIGABRT},
		{in: "SIGCLD", want: syscall.SIGCHLD},
		{in: "SIGRTMIN", want: 34},
		{in: "SIGRTMIN+3", want: 37},
		{in: "RTMIN+30", want: 64},
		{in: "SIGRTMAX", want: 64},
		{in: "SIGRTMAX-2", want: 62},
		{in: "64", want: 64},
		{in: "0", wantErr: true},
		{in: "65", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "SIGRTMIN+31", wantErr: true},
		{in: "SIGRTMAX+1", wantErr: true},
		{in: "SIGRTMIN-1", wantErr: true},
		{in: "SIGRTMIN++1", wantErr: true},
		{in: "SIGNOPE", wantErr: true},
		{in: "SIG", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSignal(tt.in)
			if tt.wantErr {
				require.ErrorIs(t, err, sandbox.ErrInvalid)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestWorkingDir(t *testing.T) {
	tests := []struct {
		name, image, container, want string
		wantErr                      bool
	}{
		{name: "default", want: "/"},
		{name: "image", image: "/srv", want: "/srv"},
		{name: "container wins", image: "/srv", container: "/data/", want: "/data"},
		{name: "relative", container: "data", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &sandbox.ContainerConfig{Name: "app", WorkingDir: tt.container, ImageConfig: sandbox.ImageConfig{WorkingDir: tt.image}}
			got, err := workingDir(c)
			if tt.wantErr {
				require.ErrorIs(t, err, sandbox.ErrInvalid)
				assert.ErrorContains(t, err, "WorkingDir")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
