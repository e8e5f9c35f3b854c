package printers

import (
	"fmt"
	"reflect"

	batchv1 "k8s.io/api/batch/v1"
	batchv1beta1 "k8s.io/api/batch/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// rowFunc computes the cells (all of them, wide ones included) and the row
// conditions of one object.
type rowFunc func(c *cellContext, obj runtime.Object) ([]any, []metav1.TableRowCondition, error)

// handler is the table layout of one kind: its columns and its row function.
type handler struct {
	columns []metav1.TableColumnDefinition
	row     rowFunc
}

// handlerMap maps the pointer type of an object (*corev1.Pod) to its handler.
type handlerMap map[reflect.Type]*handler

// add registers the layout of T, whose rows have no conditions.
func add[T runtime.Object](m handlerMap, columns []metav1.TableColumnDefinition, cells func(c *cellContext, obj T) []any) {
	addWithConditions(m, columns, func(c *cellContext, obj T) ([]any, []metav1.TableRowCondition) {
		return cells(c, obj), nil
	})
}

// addWithConditions registers the layout of T.
func addWithConditions[T runtime.Object](m handlerMap, columns []metav1.TableColumnDefinition, row func(c *cellContext, obj T) ([]any, []metav1.TableRowCondition)) {
	t := reflect.TypeFor[T]()
	if _, dup := m[t]; dup {
		panic(fmt.Sprintf("printers: duplicate table handler for %v", t)) // static registration: programming error
	}
	m[t] = &handler{
		columns: columns,
		row: func(c *cellContext, obj runtime.Object) ([]any, []metav1.TableRowCondition, error) {
			typed, ok := obj.(T)
			if !ok {
				return nil, nil, fmt.Errorf("printers: table of %v cannot hold a %T: %w", t, obj, ErrNotConvertible)
			}
			cells, conditions := row(c, typed)
			return cells, conditions, nil
		},
	}
}

// column returns a column definition of the given type ("string",
// "integer", "boolean", "date").
func column(name, typ, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: description}
}

// wide marks a column as shown only with `-o wide`.
func wide(c metav1.TableColumnDefinition) metav1.TableColumnDefinition {
	c.Priority = 1
	return c
}

// nameColumn is the NAME column of every layout.
func nameColumn() metav1.TableColumnDefinition {
	c := column("Name", "string", metav1.ObjectMeta{}.SwaggerDoc()["name"])
	c.Format = "name"
	return c
}

// ageColumn is the AGE column of every layout.
func ageColumn() metav1.TableColumnDefinition {
	return column("Age", "string", metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"])
}

// templateColumns are the wide CONTAINERS, IMAGES, SELECTOR columns of the
// workload kinds; selectorDoc describes the selector.
func templateColumns(selectorDoc string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		wide(column("Containers", "string", "Names of each container in the template.")),
		wide(column("Images", "string", "Images referenced by each container in the template.")),
		wide(column("Selector", "string", selectorDoc)),
	}
}

// builtinHandlers returns the layouts of the built-in kinds. Column names,
// types, priorities and descriptions follow the Kubernetes API server.
func builtinHandlers() handlerMap {
	m := handlerMap{}
	addCoreHandlers(m)
	addWorkloadHandlers(m)
	addOtherHandlers(m)
	return m
}

func addCoreHandlers(m handlerMap) {
	addWithConditions(m, []metav1.TableColumnDefinition{
		nameColumn(),
		column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
		column("Status", "string", "The aggregate status of the containers in this pod."),
		column("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
		ageColumn(),
		wide(column("IP", "string", corev1.PodStatus{}.SwaggerDoc()["podIP"])),
		wide(column("Node", "string", corev1.PodSpec{}.SwaggerDoc()["nodeName"])),
		wide(column("Nominated Node", "string", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"])),
		wide(column("Readiness Gates", "string", corev1.PodSpec{}.SwaggerDoc()["readinessGates"])),
	}, podRow)

	add(m, []metav1.TableColumnDefinition{
		nameColumn(),
		column("Containers", "string", "Names of each container in the template."),
		column("Images", "string", "Images referenced by each container in the template."),
		column("Pod Labels", "string", "The labels for the pod template."),
	}, podTemplateCells)

	add(m, []metav1.TableColumnDefinition{
		nameColumn(),
		column("Status", "string", "The status of the node"),
		column("Roles", "string", "The roles of the node"),
		ageColumn(),
		column("Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]),
		wide(column("Internal-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"])),
		wide(column("External-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"])),
		wide(column("OS-Image", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"])),
		wide(column("Kernel-Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"])),
		wide(column("Container-Runtime", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"])),
	}, nodeCells)

	add(m, []metav1.TableColumnDefinition{
		nameColumn(),
		column("Status", "string", "The status of the namespace"),
		ageColumn(),
	}, namespaceCells)

	add(m, []metav1.TableColumnDefinition{
		nameColumn(),
		column("Type", "string", corev1.ServiceSpec{}.SwaggerDoc()["type"]),
		column("Cluster-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]),
		column("External-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]),
		column("Port(s)", "string", corev1.ServiceSpec{}.SwaggerDoc()["ports"]),
		ageColumn(),
		wide(column("Selector", "string", corev1.ServiceSpec{}.SwaggerDoc()["selector"])),
	}, serviceCells)

	add(m, []metav1.TableColumnDefinition{
		nameColumn(),
		column("Endpoints", "string", corev1.Endpoints{}.SwaggerDoc()["subsets"]),
		ageColumn(),
	}, endpointsCells)

	add(m, []metav1.TableColumnDefinition{
		nameColumn(),
		column("AddressType", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]),
		column("Ports", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]),
		column("Endpoints", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]),
		ageColumn(),
	}, endpointSliceCells)

	add(m, []metav1.TableColumnDefinition{
		nameColumn(),
		column("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"]),
		ageColumn(),
	}, configMapCells)

	add(m, []metav1.TableColumnDefinition{
		nameColumn(),
		column("Type", "string", corev1.Secret{}.SwaggerDoc()["type"]),
		column("Data", "string", corev1.Secret{}.SwaggerDoc()["data"]),
		ageColumn(),
	}, secretCells)

	add(m, []metav1.TableColumnDefinition{nameColumn(), ageColumn()}, serviceAccountCells)

	eventColumns := []metav1.TableColumnDefinition{
		column("Last Seen", "string", corev1.Event{}.SwaggerDoc()["lastTimestamp"]),
		column("Type", "string", corev1.Event{}.SwaggerDoc()["type"]),
		column("Reason", "string", corev1.Event{}.SwaggerDoc()["reason"]),
		column("Object", "string", corev1.Event{}.SwaggerDoc()["involvedObject"]),
		wide(column("Subobject", "string", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"])),
		wide(column("Source", "string", corev1.Event{}.SwaggerDoc()["source"])),
		column("Message", "string", corev1.Event{}.SwaggerDoc()["message"]),
		wide(column("First Seen", "string", corev1.Event{}.SwaggerDoc()["firstTimestamp"])),
		wide(column("Count", "string", corev1.Event{}.SwaggerDoc()["count"])),
		wide(nameColumn()),
	}
	add(m, eventColumns, coreEventCells)
	add(m, eventColumns, eventsV1EventCells)

	add(m, []metav1.TableColumnDefinition{
		nameColumn(),
		column("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
		column("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
		ageColumn(),
	}, resourceQuotaCells)
}

func addWorkloadHandlers(m handlerMap) {
	add(m, append([]metav1.TableColumnDefinition{
		nameColumn(),
		column("Ready", "string", "Number of the pod with ready state"),
		column("Up-to-date", "string", extensionsv1beta1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
		column("Available", "string", extensionsv1beta1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
		ageColumn(),
	}, templateColumns(extensionsv1beta1.DeploymentSpec{}.SwaggerDoc()["selector"])...), deploymentCells)

	add(m, append([]metav1.TableColumnDefinition{
		nameColumn(),
		column("Desired", "integer", extensionsv1beta1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
		column("Current", "integer", extensionsv1beta1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
		column("Ready", "integer", extensionsv1beta1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
		ageColumn(),
	}, templateColumns(extensionsv1beta1.ReplicaSetSpec{}.SwaggerDoc()["selector"])...), replicaSetCells)

	add(m, append([]metav1.TableColumnDefinition{
		nameColumn(),
		column("Desired", "integer", corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]),
		column("Current", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]),
		column("Ready", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]),
		ageColumn(),
	}, templateColumns(corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"])...), replicationControllerCells)

	add(m, append([]metav1.TableColumnDefinition{
		nameColumn(),
		column("Ready", "string", "Number of the pod with ready state"),
		ageColumn(),
	}, templateColumns("")[:2]...), statefulSetCells)

	add(m, append([]metav1.TableColumnDefinition{
		nameColumn(),
		column("Desired", "integer", extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]),
		column("Current", "integer", extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]),
		column("Ready", "integer", extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]),
		column("Up-to-date", "integer", extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]),
		column("Available", "integer", extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]),
		column("Node Selector", "string", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]),
		ageColumn(),
	}, templateColumns(extensionsv1beta1.DaemonSetSpec{}.SwaggerDoc()["selector"])...), daemonSetCells)

	add(m, append([]metav1.TableColumnDefinition{
		nameColumn(),
		column("Status", "string", "Status of the job."),
		column("Completions", "string", batchv1.JobStatus{}.SwaggerDoc()["succeeded"]),
		column("Duration", "string", "Time required to complete the job."),
		ageColumn(),
	}, templateColumns(batchv1.JobSpec{}.SwaggerDoc()["selector"])...), jobCells)

	add(m, append([]metav1.TableColumnDefinition{
		nameColumn(),
		column("Schedule", "string", batchv1beta1.CronJobSpec{}.SwaggerDoc()["schedule"]),
		column("Timezone", "string", batchv1beta1.CronJobSpec{}.SwaggerDoc()["timeZone"]),
		column("Suspend", "boolean", batchv1beta1.CronJobSpec{}.SwaggerDoc()["suspend"]),
		column("Active", "integer", batchv1beta1.CronJobStatus{}.SwaggerDoc()["active"]),
		column("Last Schedule", "string", batchv1beta1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]),
		ageColumn(),
	}, templateColumns(batchv1.JobSpec{}.SwaggerDoc()["selector"])...), cronJobCells)
}

func addOtherHandlers(m handlerMap) {
	add(m, []metav1.TableColumnDefinition{
		nameColumn(),
		column("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]),
		ageColumn(),
	}, leaseCells)

	bindingColumns := func(what string, roleRefDoc string) []metav1.TableColumnDefinition {
		return []metav1.TableColumnDefinition{
			nameColumn(),
			column("Role", "string", roleRefDoc),
			ageColumn(),
			wide(column("Users", "string", "Users in the "+what)),
			wide(column("Groups", "string", "Groups in the "+what)),
			wide(column("ServiceAccounts", "string", "ServiceAccounts in the "+what)),
		}
	}
	add(m, bindingColumns("roleBinding", rbacv1beta1.RoleBinding{}.SwaggerDoc()["roleRef"]), roleBindingCells)
	add(m, bindingColumns("clusterRoleBinding", rbacv1beta1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"]), clusterRoleBindingCells)

	add(m, []metav1.TableColumnDefinition{
		nameColumn(),
		column("Value", "integer", schedulingv1.PriorityClass{}.SwaggerDoc()["value"]),
		column("Global-Default", "boolean", schedulingv1.PriorityClass{}.SwaggerDoc()["globalDefault"]),
		ageColumn(),
		wide(column("PreemptionPolicy", "string", schedulingv1.PriorityClass{}.SwaggerDoc()["preemptionPolicy"])),
	}, priorityClassCells)

	add(m, []metav1.TableColumnDefinition{
		nameColumn(),
		column("Min Available", "string", "The minimum number of pods that must be available."),
		column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
		column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
		ageColumn(),
	}, podDisruptionBudgetCells)
}
