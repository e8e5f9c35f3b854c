// Command svcbox is the program inside the images of podkit's Service
// end-to-end tests: an HTTP backend whose readiness a test toggles, and a
// client that resolves names through the pod's resolv.conf (Go's own
// resolver: search path, ndots) and reports which backend answered.
//
//	svcbox serve [addr]             serve "host <hostname>" on / and /healthz (503 while /tmp/unready exists)
//	svcbox unready | ready          create or remove /tmp/unready
//	svcbox get URL N                N requests, each on a new connection: one line per answer ("host <name>" or "ERR ...")
//	svcbox tcp HOST:PORT            connect and print "connected <remote>"
//	svcbox lookup NAME              the name's addresses, one per line, sorted
//	svcbox srv SERVICE PROTO NAME   SRV records: "<target> <port>" per line
package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const unready = "/tmp/unready"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "svcbox:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		args = []string{"serve"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch args[0] {
	case "serve":
		addr := ":8080"
		if len(args) > 1 {
			addr = args[1]
		}
		return serve(addr)
	case "unready":
		return os.WriteFile(unready, nil, 0o644)
	case "ready":
		if err := os.Remove(unready); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	case "get":
		if len(args) != 3 {
			return fmt.Errorf("usage: get URL N")
		}
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		get(args[1], n)
		return nil
	case "tcp":
		c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", args[1])
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Println("connected", c.RemoteAddr())
		return nil
	case "lookup":
		addrs, err := net.DefaultResolver.LookupHost(ctx, args[1])
		if err != nil {
			return err
		}
		sort.Strings(addrs)
		fmt.Println(strings.Join(addrs, "\n"))
		return nil
	case "srv":
		_, srvs, err := net.DefaultResolver.LookupSRV(ctx, args[1], args[2], args[3])
		if err != nil {
			return err
		}
		for _, s := range srvs {
			fmt.Println(s.Target, s.Port)
		}
		return nil
	}
	return fmt.Errorf("unknown command %q", args[0])
}

func serve(addr string) error {
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if _, err := os.Stat(unready); err == nil {
			http.Error(w, "unready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		fmt.Fprintln(w, "host", host)
	})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; os.Exit(0) }()
	return http.ListenAndServe(addr, mux)
}

// get makes n requests, each on a fresh connection (so every one is a new
// conntrack entry and a new load-balancing draw).
func get(url string, n int) {
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for range n {
		resp, err := c.Get(url)
		if err != nil {
			fmt.Println("ERR", err)
			continue
		}
		line, _ := bufio.NewReader(resp.Body).ReadString('\n')
		resp.Body.Close()
		fmt.Println(strings.TrimSpace(line))
	}
}
