package workflow

import (
	"container/heap"
	"fmt"
	"strings"
)

// maxNameLen bounds workflow, task and parameter names.
const maxNameLen = 128

// nameRule describes validName for error messages.
const nameRule = "use letters, digits, '_', '.' and '-', starting with a letter or digit, at most 128 characters"

// validName reports whether s matches [A-Za-z0-9][A-Za-z0-9_.-]{0,127}.
func validName(s string) bool {
	if s == "" || len(s) > maxNameLen || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// validEnvName reports whether s matches [A-Za-z_][A-Za-z0-9_]*.
func validEnvName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '_' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func isNameByte(c byte) bool {
	return isAlnum(c) || c == '_' || c == '.' || c == '-'
}

// order checks the dependency graph of tasks (in file order) and returns the
// tasks in topological order, ties broken by file order.
func (p *parser) order(tasks []parsedTask) ([]*Task, error) {
	index := make(map[string]int, len(tasks))
	for i, pt := range tasks {
		index[pt.task.Name] = i
	}
	if err := p.checkDependencies(tasks, index); err != nil {
		return nil, err
	}
	if cycle := findCycle(tasks, index); cycle != nil {
		first := tasks[index[cycle[0]]]
		return nil, p.fail(first.node, joinPath("tasks", cycle[0]),
			"dependency cycle %s", strings.Join(cycle, " -> "))
	}
	return topoSort(tasks, index), nil
}

// checkDependencies rejects dependencies on unknown tasks, on the task
// itself, and dependencies listed twice.
func (p *parser) checkDependencies(tasks []parsedTask, index map[string]int) error {
	for _, pt := range tasks {
		t := pt.task
		path := joinPath(joinPath("tasks", t.Name), "depends_on")
		seen := make(map[string]bool, len(t.DependsOn))
		for _, dep := range t.DependsOn {
			var msg string
			switch _, known := index[dep]; {
			case dep == t.Name:
				msg = fmt.Sprintf("task %q depends on itself", dep)
			case !known:
				msg = fmt.Sprintf("unknown task %q", dep)
			case seen[dep]:
				msg = fmt.Sprintf("task %q listed twice", dep)
			}
			if msg != "" {
				return p.fail(pt.dependsOn, path, "%s", msg)
			}
			seen[dep] = true
		}
	}
	return nil
}

// findCycle returns a dependency cycle as a path of task names whose first
// and last elements are equal (a -> b -> a: a depends on b, b on a), or nil.
// It runs a depth-first search visiting tasks in file order and dependencies
// in the order they are listed, so the cycle reported is deterministic.
// Dependencies must all be known.
func findCycle(tasks []parsedTask, index map[string]int) []string {
	const (
		unvisited = iota
		onStack
		done
	)
	state := make([]uint8, len(tasks))
	var stack []int
	var visit func(i int) []string
	visit = func(i int) []string {
		state[i] = onStack
		stack = append(stack, i)
		for _, dep := range tasks[i].task.DependsOn {
			j := index[dep]
			switch state[j] {
			case onStack:
				return cyclePath(tasks, stack, j)
			case unvisited:
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = done
		return nil
	}
	for i := range tasks {
		if state[i] == unvisited {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}

// cyclePath is the part of the DFS stack from task j to its top, closed by j.
func cyclePath(tasks []parsedTask, stack []int, j int) []string {
	start := len(stack) - 1
	for start > 0 && stack[start] != j {
		start--
	}
	path := make([]string, 0, len(stack)-start+1)
	for _, i := range stack[start:] {
		path = append(path, tasks[i].task.Name)
	}
	return append(path, tasks[j].task.Name)
}

// topoSort orders an acyclic graph with Kahn's algorithm, always taking the
// ready task that comes first in the file.
func topoSort(tasks []parsedTask, index map[string]int) []*Task {
	pending := make([]int, len(tasks))      // unfinished dependencies per task
	dependents := make([][]int, len(tasks)) // reverse edges
	ready := &minHeap{}
	for i, pt := range tasks {
		pending[i] = len(pt.task.DependsOn)
		for _, dep := range pt.task.DependsOn {
			j := index[dep]
			dependents[j] = append(dependents[j], i)
		}
		if pending[i] == 0 {
			heap.Push(ready, i)
		}
	}
	out := make([]*Task, 0, len(tasks))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		out = append(out, tasks[i].task)
		for _, k := range dependents[i] {
			if pending[k]--; pending[k] == 0 {
				heap.Push(ready, k)
			}
		}
	}
	return out
}

// minHeap is a min-heap of task indices (container/heap.Interface).
type minHeap []int

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// ValidName reports whether s is a valid workflow, task or parameter name:
// letters, digits, '_', '.' and '-', starting with a letter or digit, at most
// 128 bytes. Such a name is always safe as one path element.
func ValidName(s string) bool { return validName(s) }

// NameRule describes ValidName for error messages.
const NameRule = nameRule
