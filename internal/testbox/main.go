// Command testbox is the entrypoint of podkit's test containers: one static
// binary whose subcommands probe what a container sees (its user,
// capabilities, hostname, processes, network) and behave the way lifecycle
// tests need (exit codes, signal handling, memory use). Tests build it with
// testutil.TestboxRootfs; sandbox/fake interprets the same vocabulary in
// memory.
//
// Usage: testbox <command> [args...]; see the switch in run for the list.
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testbox <command> [args...]")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1], os.Args[2:]))
}

func run(cmd string, args []string) int {
	switch cmd {
	case "sleep":
		return sleep(args)
	case "exit":
		return atoi(arg(args, 0, "0"))
	case "print":
		fmt.Println(strings.Join(args, " "))
	case "eprint":
		fmt.Fprintln(os.Stderr, strings.Join(args, " "))
	case "term-exit":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		fmt.Println("waiting for SIGTERM")
		<-ch
		return atoi(arg(args, 0, "0"))
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ignoring SIGTERM")
		forever()
	case "id":
		groups, _ := os.Getgroups()
		sort.Ints(groups)
		gs := make([]string, len(groups))
		for i, g := range groups {
			gs[i] = strconv.Itoa(g)
		}
		fmt.Printf("uid=%d gid=%d groups=%s\n", os.Getuid(), os.Getgid(), strings.Join(gs, ","))
	case "caps":
		return caps()
	case "write":
		if err := os.WriteFile(arg(args, 0, ""), []byte(arg(args, 1, "")), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("ok")
	case "cat":
		b, err := os.ReadFile(arg(args, 0, ""))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Stdout.Write(b)
	case "hostname":
		h, err := os.Hostname()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(h)
	case "pid":
		fmt.Println(os.Getpid())
	case "ps":
		return ps()
	case "listen":
		return listen(arg(args, 0, "127.0.0.1:8080"))
	case "dial":
		return dial(arg(args, 0, "127.0.0.1:8080"))
	case "ip":
		return ips()
	case "alloc":
		return alloc(atoi(arg(args, 0, "0")))
	case "orphan":
		return orphan(arg(args, 0, "0"))
	case "rawsock":
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		syscall.Close(fd)
		fmt.Println("ok")
	case "mounts":
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Stdout.Write(b)
	case "env":
		for _, e := range os.Environ() {
			fmt.Println(e)
		}
	case "pwd":
		d, _ := os.Getwd()
		fmt.Println(d)
	default:
		fmt.Fprintf(os.Stderr, "testbox: unknown command %q\n", cmd)
		return 2
	}
	return 0
}

// forever blocks for good. (An empty select would trip the runtime's
// deadlock detector when no other goroutine exists.)
func forever() {
	for {
		time.Sleep(time.Hour)
	}
}

func arg(args []string, i int, def string) string {
	if i < len(args) {
		return args[i]
	}
	return def
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testbox: bad number %q\n", s)
		return 2
	}
	return n
}

func sleep(args []string) int {
	s := arg(args, 0, "inf")
	if s == "inf" || s == "infinity" {
		forever()
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testbox: bad duration %q\n", s)
		return 2
	}
	time.Sleep(time.Duration(f * float64(time.Second)))
	return 0
}

func caps() int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch k {
		case "CapEff", "CapBnd", "CapPrm", "CapInh", "CapAmb", "NoNewPrivs":
			want[k] = strings.TrimSpace(v)
		}
	}
	fmt.Printf("CapEff=%s CapBnd=%s CapPrm=%s NoNewPrivs=%s\n", want["CapEff"], want["CapBnd"], want["CapPrm"], want["NoNewPrivs"])
	return 0
}

func ps() int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var pids []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, n)
		}
	}
	sort.Ints(pids)
	for _, p := range pids {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
		fmt.Printf("%d %s\n", p, strings.TrimSpace(string(comm)))
	}
	return 0
}

func listen(addr string) int {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("listening on", l.Addr())
	host, _ := os.Hostname()
	for {
		c, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		go func() {
			defer c.Close()
			io.WriteString(c, "hello from "+host+"\n")
		}()
	}
}

func dial(addr string) int {
	var c net.Conn
	var err error
	for i := 0; i < 50; i++ { // the server may still be starting
		if c, err = net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	b, err := io.ReadAll(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Stdout.Write(b)
	return 0
}

func ips() int {
	ifs, err := net.Interfaces()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			fmt.Printf("%s %s\n", i.Name, a)
		}
	}
	return 0
}

func alloc(mib int) int {
	buf := make([][]byte, 0, mib)
	for i := 0; i < mib; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		buf = append(buf, b)
	}
	fmt.Printf("allocated %d MiB\n", mib)
	forever()
	runtime.KeepAlive(buf)
	return 0
}

// orphan starts a child in its own session and exits at once, so the child
// is reparented to the PID namespace's init; the child exits after the
// given seconds and must then be reaped by that init.
func orphan(secs string) int {
	if os.Getenv("TESTBOX_ORPHAN") == "1" {
		return sleep([]string{secs})
	}
	self, err := os.Executable()
	if err != nil {
		self = "/proc/self/exe"
	}
	cmd := exec.Command(self, "orphan", secs)
	cmd.Env = append(os.Environ(), "TESTBOX_ORPHAN=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(cmd.Process.Pid)
	return 0
}
