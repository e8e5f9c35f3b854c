// Package printers turns API objects into meta.k8s.io/v1 Tables, the
// server-side printing that `kubectl get` asks for with
// "Accept: application/json;as=Table;v=v1;g=meta.k8s.io".
//
// It sits in step 1 of the birth sequence: when a client reads objects back
// (the pod it just created, its node, its events), the REST handler lists or
// gets them from storage and, if the request asked for a Table, hands them to
// [Printer.ConvertToTable]. The Printer knows the column layout Kubernetes
// uses for the built-in kinds (pods, nodes, services, deployments, events, …)
// and formats every cell exactly as the Kubernetes API server does: the pod
// STATUS reason logic, "2 (5m ago)" restarts, "80:30080/TCP" ports, AGE in
// Kubernetes' human duration, "<none>" placeholders. Kinds without a
// dedicated layout get the default NAME / CREATED AT table, as in Kubernetes.
//
// Like the Kubernetes API server, rows always carry the wide (-o wide) cells;
// columns with Priority 1 are hidden by kubectl unless -o wide is given.
//
// Each row carries the object selected by TableOptions.IncludeObject (none,
// its metadata as a PartialObjectMetadata, or the full object with TypeMeta
// set). The REST layer calls [EncodeRowObjects] before serialising a Table so
// every row object is written by the server's serializer into Raw, the form
// kubectl decodes row by row.
package printers
