package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/podkit/podkit/apiserver"
)

// AuditOptions configure the audit log with kube-apiserver's flag names,
// plus --audit-log-level for a one-level policy without a policy file.
type AuditOptions struct {
	// LogPath is the file the audit events are appended to, one JSON
	// line each; "-" is standard output; empty disables auditing.
	LogPath string
	// PolicyFile is an audit.k8s.io/v1 Policy; it wins over Level.
	PolicyFile string
	// Level applies to every request when there is no PolicyFile:
	// None, Metadata (default), Request or RequestResponse.
	Level string
}

// AddAuditFlags registers the audit flags.
func AddAuditFlags(fs *pflag.FlagSet, o *AuditOptions) {
	fs.StringVar(&o.LogPath, "audit-log-path", o.LogPath, "append an audit event (audit.k8s.io/v1 Event, one JSON line) per request to this file; - is standard output")
	fs.StringVar(&o.PolicyFile, "audit-policy-file", o.PolicyFile, "audit policy (audit.k8s.io/v1 Policy) choosing each request's level")
	fs.StringVar(&o.Level, "audit-log-level", o.Level, "level of every request without --audit-policy-file: None, Metadata, Request or RequestResponse (default Metadata)")
}

// configureAudit sets cfg.Audit from o; the log file is closed when ctx
// ends.
func configureAudit(ctx context.Context, cfg *apiserver.Config, o AuditOptions) error {
	if o.LogPath == "" {
		if o.PolicyFile != "" || o.Level != "" {
			return fmt.Errorf("--audit-policy-file and --audit-log-level need --audit-log-path")
		}
		return nil
	}
	a := &apiserver.Audit{Policy: apiserver.AuditMetadata}
	switch {
	case o.PolicyFile != "":
		p, err := apiserver.LoadAuditPolicy(o.PolicyFile)
		if err != nil {
			return err
		}
		a.Policy = p
	case o.Level != "":
		l, ok := apiserver.ParseAuditLevel(o.Level)
		if !ok {
			return fmt.Errorf("--audit-log-level %q: want None, Metadata, Request or RequestResponse", o.Level)
		}
		a.Policy = l
	}
	var sink io.Writer = os.Stdout
	if o.LogPath != "-" {
		if err := os.MkdirAll(filepath.Dir(o.LogPath), 0o700); err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		f, err := os.OpenFile(o.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		context.AfterFunc(ctx, func() { _ = f.Close() })
		sink = f
	}
	a.Sink = sink
	cfg.Audit = a
	return nil
}
