// Package crilog is the container log stage of step 14 of the birth
// sequence: a container's stdout and stderr become a CRI log file
// (/var/log/pods/<ns>_<pod>_<uid>/<container>/<attempt>.log), and later
// that file becomes the answer to `kubectl logs`. The sandbox runtime's
// supervisor writes it with a Writer; the kubelet's log server reads it
// with ReadLogs.
//
// # Format
//
// Each line is one entry, exactly as containerd's CRI plugin writes it
// and the kubelet's pkg/kubelet/kuberuntime/logs parses it:
//
//	2016-10-06T00:17:09.669794202Z stdout P first 16 KiB of a long line
//	2016-10-06T00:17:09.669794203Z stdout F rest of the long line
//	2016-10-06T00:17:09.669801450Z stderr F a short line
//
// The time is RFC 3339 with nanoseconds (trailing zeros trimmed), in the
// clock's location as containerd does (time.Now: local time). F (full)
// ends a line of the container's output; P (partial) entries carry pieces
// of a line that was longer than the maximum line size (16 KiB by default,
// containerd's max_container_log_line_size) or that had no newline when
// the stream closed. The splitting follows containerd exactly, and does
// not depend on how the container's writes were chunked: P entries of
// exactly the maximum size, then an F entry with the rest; a line of
// exactly the maximum size is one F entry; an empty line is an F entry
// with empty content; a trailing "\r\n" is stripped as a whole, like
// containerd's readLine does (any other '\r' stays content).
//
// # Writing
//
// One Writer per container log file; Writer.Stream gives an io.WriteCloser
// per stream (the supervisor copies each pipe into one). Entries of all
// streams are serialised whole under one lock, stamped under that lock
// (times never go backwards in the file), and batched into one write(2)
// per Write call. Write errors on the file never fail a stream's Write:
// like containerd, the container's output keeps draining (a full disk
// must not block the container); entries are dropped and the first error
// is logged and returned by Close.
//
// # Rotation
//
// The kubelet's container log manager rotates by polling sizes every 10s
// and asking the runtime to ReopenContainerLog. Here the writer, the only
// process that writes the file, rotates it itself, at an entry boundary,
// as soon as the next entry would take the file past MaxSize (10 MiB by
// default, the kubelet's containerLogMaxSize): it renames path to
// path.YYYYMMDD-HHMMSS (UTC; ".1", ".2"… on a clash within one second),
// the kubelet's names, opens a fresh path, and removes the oldest rotated
// files so that MaxFiles (5 by default, the kubelet's containerLogMaxFiles)
// remain, the current one included. Rotated files are not compressed, so a
// reader needs no gzip.
//
// # Reading
//
// ReadLogs follows the kubelet's ReadLogs: content is written to stdout or
// stderr by stream, P entries without a newline so that a split line comes
// out whole, F entries with one; Timestamps prefixes each line with the
// time of its first entry in the kubelet's fixed-width RFC 3339 format;
// Since and LimitBytes behave as in the kubelet. It improves on it where
// the kubelet is known to be loose: TailLines counts logical lines, not
// entries, per stream (P entries of one stream may be interleaved with
// the other's); Since keeps or drops a line as a whole; a follower keeps
// reading across rotation without losing the end of the old file (it
// drains the renamed file before switching, and reads any file rotated in
// between two polls) and restarts from the beginning after a truncation;
// Stream selects one stream even with TailLines.
//
// A follower polls (PollInterval, 100ms by default) rather than using
// inotify: an inotify instance per `kubectl logs -f` counts against
// fs.inotify.max_user_instances (128 by default) and the open-files limit,
// and is the cause of the kubelet's known "too many open files" failures;
// a poll is one fstat and one stat, its latency is bounded by the
// interval, and it cannot miss an event. The follower stops when ctx is
// done or when ReadOptions.Done is closed (the container exited and its
// streams were closed): it then drains what is left and returns nil,
// where the kubelet would ask the runtime whether the container still
// runs.
package crilog
