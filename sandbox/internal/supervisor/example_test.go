package supervisor_test

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/podkit/podkit/sandbox/internal/supervisor"
)

// The binary's main dispatches the re-exec first (native.Init does this
// for podkit's binaries); a runtime then connects, creates a task and
// follows its exit.
func Example() {
	if os.Getenv("PODKIT_SANDBOX_MODE") == supervisor.Mode {
		supervisor.Main(nil) // a real binary passes its native launcher
	}
	ctx := context.Background()
	c, err := supervisor.Connect(ctx, "/run/podkit/runtime")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close() // the supervisor and its tasks keep running
	events, err := c.Events(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := c.CreateTask(ctx, supervisor.TaskSpec{
		ID:      "c1",
		Kind:    supervisor.KindExec,
		LogPath: "/var/log/pods/default_web_uid/app/0.log",
		Exec: &supervisor.ExecSpec{
			Argv:    []string{"runc", "create", "--bundle", "/run/podkit/runtime/containers/c1", "--pid-file", "/run/podkit/runtime/containers/c1/pid", "c1"},
			PidFile: "/run/podkit/runtime/containers/c1/pid",
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created, pid", st.Pid)
	if err := c.Signal(ctx, "c1", syscall.SIGTERM); err != nil {
		fmt.Println(err)
	}
	exit := <-events
	fmt.Println(exit.ID, "exited with", exit.ExitCode, "OOMKilled:", exit.OOMKilled)
	if err := c.Delete(ctx, "c1"); err != nil {
		fmt.Println(err)
	}
}
