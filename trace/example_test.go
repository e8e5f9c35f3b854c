package trace_test

import (
	"os"
	"time"

	"github.com/podkit/podkit/trace"
)

func ExampleWriteText() {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tr := &trace.Trace{}
	tr.Add(trace.StepAdmitted, t0, "")
	tr.Add(trace.StepStored, t0.Add(300*time.Microsecond), "")
	tr.Add(trace.StepScheduled, t0.Add(2*time.Millisecond), "node-1")
	tr.Add(trace.StepBound, t0.Add(3*time.Millisecond), "")
	tr.Add(trace.StepSeen, t0.Add(4*time.Millisecond), "")
	tr.Add(trace.StepReady, t0.Add(20*time.Millisecond), "")
	// A pod's annotation holds the encoded trace.
	v := trace.Encode(tr)
	back, _ := trace.Decode(v)
	_ = trace.WriteText(os.Stdout, back, trace.TextOptions{Width: 20})
	// Output:
	//   step         at (ms)  took (ms)  by             waterfall
	//   admitted       0.000      0.000  apiserver      ▏
	//   stored         0.300      0.300  apiserver      ▏
	//   scheduled      2.000      1.700  scheduler      ██ node-1
	//   bound          3.000      1.000  apiserver        █
	//   seen           4.000      1.000  kubelet           █
	//   ready         20.000     16.000  kubelet            ████████████████
	//   total         20.000
}
