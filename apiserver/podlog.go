package apiserver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The pods/log subresource: GET /api/v1/namespaces/{ns}/pods/{name}/log
// with PodLogOptions as query parameters. As in kube-apiserver (LogREST,
// pod.LogLocation) the server validates the options, picks the container
// (the only one, or the one named), resolves the pod's node to its
// kubelet and streams the kubelet's /containerLogs answer through,
// flushing as it arrives when following. A pod not yet on a node has an
// empty log.

// podLogResource names the subresource in errors, as kube-apiserver does.
var podLogResource = schema.GroupResource{Resource: "pods/log"}

// isPodLogPath reports GETs of pods/{name}/log, which like watches are
// long-running and not counted against the in-flight limit.
func isPodLogPath(path string) bool {
	parts := splitPath(path)
	n := len(parts)
	return n >= 7 && parts[0] == "api" && parts[n-1] == "log" && parts[n-3] == "pods"
}

// servePodLog serves GET pods/{name}/log.
func (s *Server) servePodLog(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) error {
	if info.Verb != "get" {
		return errMethodNotAllowed
	}
	opts, err := parsePodLogOptions(r.URL.Query())
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if errs := validatePodLogOptions(opts); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, info.Name, errs)
	}
	ctx := r.Context()
	obj, err := s.store.Get(ctx, key(res, info.Namespace, info.Name))
	if err != nil {
		return storageError(err, res.GroupResource(), info.Name)
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("pods/log of %T", obj))
	}
	container, err := logContainer(pod, opts.Container)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	nodes, ok := s.lookup(gvCore, "nodes")
	if !ok {
		return apierrors.NewInternalError(errors.New("nodes are not served"))
	}
	nobj, err := s.store.Get(ctx, key(nodes, "", pod.Spec.NodeName))
	if err != nil {
		return storageError(err, nodes.GroupResource(), pod.Spec.NodeName)
	}
	base, rt, err := s.kubelet(ctx, nobj.(*corev1.Node))
	if err != nil {
		return unknownError(err)
	}
	loc := base.JoinPath("containerLogs", pod.Namespace, pod.Name, container)
	loc.RawQuery = kubeletLogParams(opts).Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	client := &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return unknownError(err)
	}
	defer resp.Body.Close()
	if err := checkKubeletResponse(resp, info.Name); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	return copyStream(w, resp.Body, opts.Follow)
}

// unknownError is a 500 carrying err's text, as kube-apiserver answers
// errors that are not API errors (an unreachable kubelet).
func unknownError(err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
		Code: http.StatusInternalServerError, Message: err.Error()}}
}

// checkKubeletResponse turns a kubelet error into the API error
// kube-apiserver's GenericHttpResponseChecker makes of it.
func checkKubeletResponse(resp *http.Response, name string) error {
	if resp.StatusCode >= http.StatusOK && resp.StatusCode <= http.StatusPartialContent {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 50000))
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	text := string(body)
	switch resp.StatusCode {
	case http.StatusInternalServerError:
		return apierrors.NewInternalError(errors.New(text))
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(text)
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, "", podLogResource, name, text, 0, false)
}

// copyStream copies the kubelet's answer to the client, flushing every
// chunk when following: each read returns what has arrived.
func copyStream(w http.ResponseWriter, body io.Reader, flush bool) error {
	rc := http.NewResponseController(w)
	if flush {
		_ = rc.Flush()
	}
	buf := make([]byte, 32<<10)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return nil // the client went away
			}
			if flush {
				if err := rc.Flush(); err != nil {
					return nil
				}
			}
		}
		if rerr != nil {
			// EOF ends the log; any other error (the client or the
			// kubelet went away) can only end the stream now.
			return nil
		}
	}
}

// logContainer picks the container whose log is asked for, with
// kube-apiserver's messages.
func logContainer(pod *corev1.Pod, name string) (string, error) {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	if name == "" {
		switch len(pod.Spec.Containers) {
		case 1:
			return pod.Spec.Containers[0].Name, nil
		case 0:
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
		default:
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %s", pod.Name, names))
		}
	}
	for _, n := range names {
		if n == name {
			return name, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
}

// parsePodLogOptions decodes PodLogOptions from query parameters as the
// API machinery's parameter codec does: booleans are true unless absent,
// "0" or "false"; integers are decimal; sinceTime is RFC 3339.
func parsePodLogOptions(q url.Values) (*corev1.PodLogOptions, error) {
	o := &corev1.PodLogOptions{Container: q.Get("container")}
	for name, dst := range map[string]*bool{"follow": &o.Follow, "previous": &o.Previous, "timestamps": &o.Timestamps,
		"insecureSkipTLSVerifyBackend": &o.InsecureSkipTLSVerifyBackend} {
		v := q[name]
		if err := runtime.Convert_Slice_string_To_bool(&v, dst, nil); err != nil {
			return nil, err
		}
	}
	for name, dst := range map[string]**int64{"sinceSeconds": &o.SinceSeconds, "tailLines": &o.TailLines, "limitBytes": &o.LimitBytes} {
		if v, ok := q[name]; ok && len(v) > 0 {
			n, err := strconv.ParseInt(v[0], 10, 64)
			if err != nil {
				return nil, err
			}
			*dst = &n
		}
	}
	if v := q.Get("sinceTime"); v != "" {
		var t metav1.Time
		if err := t.UnmarshalQueryParameter(v); err != nil {
			return nil, err
		}
		o.SinceTime = &t
	}
	if v, ok := q["stream"]; ok && len(v) > 0 {
		o.Stream = &v[0]
	}
	return o, nil
}

// validatePodLogOptions is Kubernetes' ValidatePodLogOptions.
func validatePodLogOptions(o *corev1.PodLogOptions) field.ErrorList {
	var errs field.ErrorList
	if o.TailLines != nil && *o.TailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *o.TailLines, "must be greater than or equal to 0"))
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *o.LimitBytes, "must be greater than 0"))
	}
	switch {
	case o.SinceSeconds != nil && o.SinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case o.SinceSeconds != nil && *o.SinceSeconds < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *o.SinceSeconds, "must be greater than 0"))
	}
	if o.Stream != nil {
		switch *o.Stream {
		case corev1.LogStreamAll, corev1.LogStreamStdout, corev1.LogStreamStderr:
		default:
			errs = append(errs, field.NotSupported(field.NewPath("stream"), *o.Stream,
				[]string{corev1.LogStreamAll, corev1.LogStreamStderr, corev1.LogStreamStdout}))
		}
	}
	return errs
}

// kubeletLogParams is the kubelet's query for opts, as LogLocation builds
// it.
func kubeletLogParams(o *corev1.PodLogOptions) url.Values {
	p := url.Values{}
	if o.Follow {
		p.Add("follow", "true")
	}
	if o.Previous {
		p.Add("previous", "true")
	}
	if o.Timestamps {
		p.Add("timestamps", "true")
	}
	if o.SinceSeconds != nil {
		p.Add("sinceSeconds", strconv.FormatInt(*o.SinceSeconds, 10))
	}
	if o.SinceTime != nil {
		p.Add("sinceTime", o.SinceTime.Format(time.RFC3339))
	}
	if o.TailLines != nil {
		p.Add("tailLines", strconv.FormatInt(*o.TailLines, 10))
	}
	if o.LimitBytes != nil {
		p.Add("limitBytes", strconv.FormatInt(*o.LimitBytes, 10))
	}
	if o.Stream != nil && !strings.EqualFold(*o.Stream, corev1.LogStreamAll) {
		p.Add("stream", *o.Stream)
	}
	return p
}
