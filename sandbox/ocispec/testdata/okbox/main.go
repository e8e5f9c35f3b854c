// Command okbox is the entrypoint of the ocispec runtime tests. Run
// without arguments it prints "ok". Run as "okbox check" it verifies,
// from inside the container, what the spec promised (the WANT_*
// variables say what to expect) and prints "ok" only when all holds;
// otherwise it prints each failure and exits 1.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Println("ok")
		return
	}
	if os.Args[1] != "check" {
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", os.Args[1])
		os.Exit(2)
	}
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }

	if want := os.Getenv("WANT_UID"); strconv.Itoa(os.Getuid()) != want {
		fail("uid %d, want %s", os.Getuid(), want)
	}
	if want := os.Getenv("WANT_GID"); strconv.Itoa(os.Getgid()) != want {
		fail("gid %d, want %s", os.Getgid(), want)
	}
	groups, err := os.Getgroups()
	if err != nil {
		fail("getgroups: %v", err)
	}
	var gs []string
	for _, g := range groups {
		gs = append(gs, strconv.Itoa(g))
	}
	if got, want := strings.Join(gs, ","), os.Getenv("WANT_GROUPS"); got != want {
		fail("groups %s, want %s", got, want)
	}
	if cwd, _ := os.Getwd(); cwd != os.Getenv("WANT_CWD") {
		fail("cwd %q, want %q", cwd, os.Getenv("WANT_CWD"))
	}
	if h, _ := os.Hostname(); h != os.Getenv("WANT_HOSTNAME") {
		fail("hostname %q, want %q", h, os.Getenv("WANT_HOSTNAME"))
	}
	if h := os.Getenv("HOSTNAME"); h != os.Getenv("WANT_HOSTNAME") {
		fail("HOSTNAME %q, want %q", h, os.Getenv("WANT_HOSTNAME"))
	}
	if b, err := os.ReadFile("/etc/hosts"); err != nil || string(b) != os.Getenv("WANT_HOSTS") {
		fail("/etc/hosts %q (%v), want %q", b, err, os.Getenv("WANT_HOSTS"))
	}
	ro := os.Getenv("RO_DIR")
	if err := os.WriteFile(filepath.Join(ro, "x"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		fail("write into read-only volume %s: %v, want EROFS", ro, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/keys", &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFCHR {
		fail("/proc/keys is not masked by a character device (%v)", err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fail("read status: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "CapBnd", "CapEff", "NoNewPrivs", "PPid":
			if want := os.Getenv("WANT_" + strings.ToUpper(k)); v != want {
				fail("%s %s, want %s", k, v, want)
			}
		}
	}
	if os.Getpid() != 1 {
		fail("pid %d, want 1 (new PID namespace)", os.Getpid())
	}
	if len(failures) > 0 {
		for _, f := range failures {
			fmt.Println(f)
		}
		os.Exit(1)
	}
	fmt.Println("ok")
}
