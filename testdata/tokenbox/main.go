// Command tokenbox is the test image of the projected service-account
// token test: a pod that reads its credentials from
// /var/run/secrets/kubernetes.io/serviceaccount and calls the API server
// with them, as in-cluster clients (client-go's rest.InClusterConfig) do.
//
//	tokenbox              sleep until SIGTERM
//	tokenbox token        print the token
//	tokenbox whoami URL   ask the API server at URL who the token is
//	                      (SelfSubjectReview), verifying it with ca.crt;
//	                      prints "user <name>" and "namespace <ns>"
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const dir = "/var/run/secrets/kubernetes.io/serviceaccount"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tokenbox:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		return nil
	}
	switch args[0] {
	case "token":
		b, err := os.ReadFile(filepath.Join(dir, "token"))
		if err != nil {
			return err
		}
		fmt.Print(string(b))
		return nil
	case "whoami":
		if len(args) != 2 {
			return errors.New("usage: whoami URL")
		}
		return whoami(args[1])
	}
	return fmt.Errorf("unknown command %q", args[0])
}

func whoami(url string) error {
	token, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		return err
	}
	ns, err := os.ReadFile(filepath.Join(dir, "namespace"))
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return errors.New("ca.crt holds no certificate")
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(url, "/")+"/apis/authentication.k8s.io/v1/selfsubjectreviews", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("%s: %s", resp.Status, data)
	}
	var r struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	fmt.Printf("user %s\nnamespace %s\n", r.Status.UserInfo.Username, ns)
	return nil
}
