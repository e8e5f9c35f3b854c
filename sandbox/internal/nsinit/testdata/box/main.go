// Command box is the static test entrypoint of nsinit's tests, built into
// a throwaway rootfs (the command names follow internal/testbox).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: box CMD [ARGS]"))
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "sleep":
		if len(args) > 0 && args[0] != "inf" {
			n, _ := strconv.Atoi(args[0])
			time.Sleep(time.Duration(n) * time.Second)
			return
		}
		time.Sleep(1 << 62) // not select{}: the runtime would call that a deadlock
	case "exit":
		n, _ := strconv.Atoi(args[0])
		os.Exit(n)
	case "print":
		fmt.Println(strings.Join(args, " "))
	case "id":
		gs, err := syscall.Getgroups()
		check(err)
		var s []string
		for _, g := range gs {
			s = append(s, strconv.Itoa(g))
		}
		fmt.Printf("uid=%d gid=%d groups=%s\n", os.Getuid(), os.Getgid(), strings.Join(s, ","))
	case "caps":
		b, err := os.ReadFile("/proc/self/status")
		check(err)
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			for _, k := range []string{"CapEff", "CapBnd", "CapPrm", "CapInh", "CapAmb", "NoNewPrivs"} {
				if v, ok := strings.CutPrefix(l, k+":"); ok {
					out = append(out, k+"="+strings.TrimSpace(v))
				}
			}
		}
		fmt.Println(strings.Join(out, " "))
	case "write":
		check(os.WriteFile(args[0], []byte(strings.Join(args[1:], " ")), 0o644))
		fmt.Println("ok")
	case "cat":
		b, err := os.ReadFile(args[0])
		check(err)
		os.Stdout.Write(b)
	case "hostname":
		h, err := os.Hostname()
		check(err)
		fmt.Println(h)
	case "pid":
		fmt.Println(os.Getpid())
	case "ps":
		ents, err := os.ReadDir("/proc")
		check(err)
		for _, e := range ents {
			if _, err := strconv.Atoi(e.Name()); err == nil {
				fmt.Println(e.Name())
			}
		}
	case "readlink":
		l, err := os.Readlink(args[0])
		check(err)
		fmt.Println(l)
	case "rawsock":
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
		if err != nil {
			fmt.Println(err)
			return
		}
		syscall.Close(fd)
		fmt.Println("ok")
	case "orphan":
		// Start a child that waits until file args[0] exists, print its
		// pid and exit: the child is reparented to the PID namespace's init.
		cmd := exec.Command("/proc/self/exe", "await", args[0])
		check(cmd.Start())
		fmt.Println(cmd.Process.Pid)
	case "await":
		for {
			if _, err := os.Stat(args[0]); err == nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	case "env":
		for _, e := range os.Environ() {
			fmt.Println(e)
		}
	case "pwd":
		d, err := os.Getwd()
		check(err)
		fmt.Println(d)
	case "stat":
		var st syscall.Stat_t
		check(syscall.Lstat(args[0], &st))
		fmt.Printf("mode=%o rdev=%d:%d uid=%d gid=%d\n", st.Mode, (st.Rdev>>8)&0xfff, st.Rdev&0xff|(st.Rdev>>12)&0xfff00, st.Uid, st.Gid)
	case "ls":
		ents, err := os.ReadDir(args[0])
		check(err)
		for _, e := range ents {
			fmt.Println(filepath.Join(args[0], e.Name()))
		}
	default:
		fail(fmt.Errorf("unknown command %q", os.Args[1]))
	}
}

func check(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "box:", err)
	os.Exit(1)
}
