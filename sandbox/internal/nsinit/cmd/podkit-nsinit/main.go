// Command podkit-nsinit is a small executable for nsinit's child modes
// (container init, exec helper, Go pause), for CreateConfig.Binary,
// ExecConfig.Binary and PauseConfig.Binary.
//
// Re-executing the runtime's own binary works too, but a container start
// then pays that binary's size (page faults) and package initialisation:
// about 3 ms for nsinit's test binary, more for a binary linking
// client-go, against about 1 ms for this one. The benchmark
// BenchmarkCreateStart/small-binary measures the difference.
package main

import "github.com/podkit/podkit/sandbox/internal/nsinit"

func main() { nsinit.Main() }
