package nsinit

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAssemblerRejectsLongJumps(t *testing.T) {
	var a asm
	a.label("start")
	a.emit(make([]byte, 200)...)
	a.jump(0xeb, "start")
	assert.Panics(t, func() { a.assemble() })
}
