// Command demo-web is the program inside podkit's demo image
// (`podkit up` serves it from its embedded registry as demo/web:1): a small
// static HTTP server that logs each request and answers /healthz, plus an
// "init" mode for init containers. It needs nothing from the internet:
// `make build` compiles it with CGO disabled and podkit packs it into an
// image.
//
//	demo-web [serve] [-addr :8080]    serve HTTP
//	demo-web init FILE TEXT           write TEXT to FILE and exit (init containers)
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		if len(os.Args) != 4 {
			log.Fatal("usage: demo-web init FILE TEXT")
		}
		if err := os.WriteFile(os.Args[2], []byte(os.Args[3]+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Println("init: wrote", os.Args[2])
		return
	}
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", ":8080", "listen address")
	fs.Parse(args)
	host, _ := os.Hostname()
	start := time.Now()
	http.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		log.Printf("%s %s from %s", r.Method, r.URL.Path, r.RemoteAddr)
		fmt.Fprintf(w, "hello from %s (up %s)\n", host, time.Since(start).Round(time.Second))
		if b, err := os.ReadFile("/work/message"); err == nil {
			fmt.Fprintf(w, "init said: %s", b)
		}
	})
	// As PID 1 of its PID namespace the program gets no default signal
	// handling: exit on SIGTERM explicitly, so pods stop at once.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-sig
		log.Printf("demo-web: %s, exiting", s)
		os.Exit(0)
	}()
	log.Printf("demo-web %s listening on %s", host, *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
