// Package server is the kubelet's HTTP server: the node end of `kubectl
// logs`. In the birth sequence it serves after step 14 (containers
// launched, their output written to CRI log files by the runtime) and is
// reached through the API server's pods/log subresource, which resolves the
// pod's node to this server's address (node.status.daemonEndpoints
// .kubeletEndpoint.port) and streams the answer through.
//
// Endpoints, as the kubelet serves them (pkg/kubelet/server):
//
//	GET /containerLogs/{namespace}/{pod}/{container}   CRI log as plain text
//	    ?follow= &previous= &timestamps= &tailLines= &sinceSeconds= &sinceTime=
//	    &limitBytes= &stream=   (and the legacy tail=N|all)
//	GET /pods      the node's pods as a v1 PodList (JSON)
//	GET /healthz   "ok", or 500 with the failing check
//	GET /metrics   Prometheus text from the configured Gatherer
//
// # Which log
//
// A LogSource answers "which file, and when does it end" for a request
// (namespace, pod, container, previous). Kubernetes decides the instance
// from the pod's status (validateContainerLogStatus): the running
// instance, else the terminated one, else the last terminated one; with
// previous=true only lastState.terminated; a waiting container answers
// `container "app" in pod "web" is waiting to start: ContainerCreating`.
// LogContainerID implements exactly that, and StatusLogs combines it with
// any sandbox.SandboxRunner (the file is the runtime's LogPath); the pod
// lookup it is given must carry the kubelet's freshest status (the status
// manager's view), not the API server's possibly older copy. PollLogFile
// adapts a kubelet that already resolves files itself, as a
// (path, running) function. When the server is given the node's pods it
// answers an unknown pod or container with the kubelet's 404 itself.
//
// # Follow
//
// A LogSource returns, with the path, a channel closed once that container
// instance has exited and its output is completely written. The reader
// (sandbox/crilog.ReadLogs) then drains what is left and the response
// ends, as `kubectl logs -f` ends when the container exits; a channel
// already closed means the instance is not running and a follow returns at
// the end of the file. While following, output is flushed as soon as the
// writer goes idle: a flusher goroutine is woken after each write and
// flushes under the same lock, so a backlog of thousands of lines goes out
// in a few large chunks while a new line still reaches the client at once
// (Kubernetes' flushwriter flushes every write).
//
// # Who may ask
//
// With Config.Authenticator set (podkit.Node sets it whenever the node has
// a serving certificate, i.e. always in a secure cluster) every request
// must authenticate, as the kubelet's --anonymous-auth=false: a client
// certificate chaining to the cluster CA (the API server presents its
// kube-apiserver-kubelet-client certificate when it proxies pods/log), or
// a bearer token the API server vouches for through TokenReview
// (DelegatedAuthenticator). Config.Authorizer then decides with a
// SubjectAccessReview against the node object's subresource the path
// maps to (RequestAttributes: nodes/proxy for container logs and /pods,
// nodes/log, nodes/metrics, nodes/stats), as the kubelet's Webhook
// authorization mode does. Answers of both are cached briefly. Without
// credentials the answer is 401 "Unauthorized", without permission 403
// "Forbidden (user=…, verb=…, resource=nodes, subresource=…)".
//
// # Errors
//
// Errors are plain text with the kubelet's status codes, because the API
// server turns them into a metav1.Status the way kube-apiserver's
// response checker does (400 → BadRequest with the body as message, 404 →
// NotFound): bad parameters 400 or 422, an unknown pod or container 404,
// a container without logs to show 400. Once streaming has begun the
// status is sent; a later failure only ends the stream.
package server
