package replay

import (
	"strings"
	"testing"
)

// TestTaskKey: a task's key is its name, an instance's its name and index
// in brackets, whatever the name's length, and Key is AppendKey's bytes,
// made in one allocation.
func TestTaskKey(t *testing.T) {
	long := strings.Repeat("n", 100)
	for _, c := range []struct {
		task Task
		want string
	}{
		{Task{Name: "load", Parent: -1}, "load"},
		{Task{Name: "each", Parent: 0, taskEnd: &taskEnd{Instance: 0}}, "each[0]"},
		{Task{Name: "each", Parent: 0, taskEnd: &taskEnd{Instance: 99999}}, "each[99999]"},
		{Task{Name: long, Parent: 2, taskEnd: &taskEnd{Instance: 7}}, long + "[7]"},
	} {
		if got := c.task.Key(); got != c.want || string(c.task.AppendKey(nil)) != c.want {
			t.Errorf("Key() = %q, AppendKey %q, want %q", got, c.task.AppendKey(nil), c.want)
		}
	}
	inst := Task{Name: "each", Parent: 0, taskEnd: &taskEnd{Instance: 4321}}
	if n := testing.AllocsPerRun(100, func() { keySink = inst.Key() }); n != 1 {
		t.Errorf("an instance's Key allocates %v times, want 1 (the string): every event of an instance asks for it", n)
	}
}

// keySink keeps the keys TestTaskKey makes on the heap, as an event does.
var keySink string
