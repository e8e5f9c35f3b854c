package ocispec

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/podkit/podkit/sandbox"
)

// DefaultPath is the PATH a container gets when neither its image nor its
// configuration sets one (containerd's and Docker's default).
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Command returns the process arguments of a container, merging the pod
// spec's command and args with the image's entrypoint and cmd as
// Kubernetes defines it:
//
//   - neither command nor args: the image's Entrypoint followed by its Cmd;
//   - command only: command (the image's Entrypoint and Cmd are ignored);
//   - args only: the image's Entrypoint followed by args;
//   - both: command followed by args.
//
// An image Entrypoint of exactly [""] (Docker's way to reset it) counts as
// none. When nothing is left, the error wraps sandbox.ErrInvalid.
func Command(c *sandbox.ContainerConfig) ([]string, error) {
	if c == nil {
		return nil, fmt.Errorf("no container configuration: %w", sandbox.ErrInvalid)
	}
	command, args := c.Command, c.Args
	if len(command) == 0 {
		if len(args) == 0 {
			args = c.ImageConfig.Cmd
		}
		ep := c.ImageConfig.Entrypoint
		if !(len(ep) == 1 && ep[0] == "") {
			command = ep
		}
	}
	argv := make([]string, 0, len(command)+len(args))
	argv = append(append(argv, command...), args...)
	if len(argv) == 0 {
		return nil, fmt.Errorf("container %q: no command specified: %w", c.Name, sandbox.ErrInvalid)
	}
	return argv, nil
}

// Env returns a container's environment as containerd builds it: PATH
// (DefaultPath) and HOSTNAME (when hostname is not empty) first, then the
// image's variables, then the container's; a later variable replaces an
// earlier one of the same name in place, and an entry without "=" removes
// the variable.
func Env(image, container []string, hostname string) []string {
	env := []string{"PATH=" + DefaultPath}
	if hostname != "" {
		env = mergeEnv(env, []string{"HOSTNAME=" + hostname})
	}
	env = mergeEnv(env, image)
	return mergeEnv(env, container)
}

// mergeEnv applies overrides to base: "K=V" replaces K where it is or is
// appended, a bare "K" removes K.
func mergeEnv(base, overrides []string) []string {
	out := slices.Clone(base)
	index := func(k string) int {
		return slices.IndexFunc(out, func(e string) bool {
			name, _, _ := strings.Cut(e, "=")
			return name == k
		})
	}
	for _, kv := range overrides {
		k, _, set := strings.Cut(kv, "=")
		i := index(k)
		switch {
		case !set && i >= 0:
			out = slices.Delete(out, i, i+1)
		case !set:
		case i >= 0:
			out[i] = kv
		default:
			out = append(out, kv)
		}
	}
	return out
}

// workingDir returns the process's cwd: the container's, else the
// image's, else "/". It must be absolute (runc and crun require it).
func workingDir(c *sandbox.ContainerConfig) (string, error) {
	cwd := "/"
	switch {
	case c.WorkingDir != "":
		cwd = c.WorkingDir
	case c.ImageConfig.WorkingDir != "":
		cwd = c.ImageConfig.WorkingDir
	}
	if !path.IsAbs(cwd) {
		return "", fmt.Errorf("container %q: WorkingDir %q is not absolute: %w", c.Name, cwd, sandbox.ErrInvalid)
	}
	return path.Clean(cwd), nil
}
