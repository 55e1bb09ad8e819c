package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// maxInstances caps a dynamic fan-out.
const maxInstances = 100_000

// expand turns a released fan-out node into its instances: a fixed number,
// a count read from an upstream output, or one per item of an upstream
// list. The node then runs until its instances end. An output that does not
// give a count or a list fails the node.
func (s *State) expand(n *Task, at int64) {
	count, items, err := fanOut(n)
	s.touch(n)
	s.touchRun(n.Run) // before instances are appended to its tasks
	n.Expanded = true
	s.setTask(n, Running)
	if err != nil {
		n.Error, n.ExitCode = err.Error(), -1
		s.fail(n, at)
		return
	}
	n.Count = count
	if count == 0 {
		n.Output = []byte("[]")
		s.succeed(n, at)
		return
	}
	spec := n.Spec()
	n.inst = &instStats{}
	for i := 0; i < count; i++ {
		t := s.newTask(n.Run, n.SpecIndex, spec, n.Index)
		s.own(t)
		t.Instance, t.Count = i, count
		if items != nil {
			t.Item = items[i]
		}
		n.Run.Tasks = append(n.Run.Tasks, t)
		n.Instances = append(n.Instances, t.Index)
		n.inst.count(t.Status, +1)
		n.Run.active++
		n.instActive++
		s.release(t, at)
	}
}

// fanOut computes a node's instances from its spec and upstream outputs.
func fanOut(n *Task) (int, [][]byte, error) {
	spec := n.Spec()
	if spec.Parallel > 0 {
		return spec.Parallel, nil, nil
	}
	src, field := spec.FanOutSource()
	raw, err := outputField(n, src, field)
	if err != nil {
		return 0, nil, err
	}
	if spec.Foreach != "" {
		return items(raw, spec.Foreach)
	}
	var count int
	if err := json.Unmarshal(raw, &count); err != nil || count < 0 || count > maxInstances {
		return 0, nil, fmt.Errorf("parallel: %s is %s, not a count from 0 to %d", spec.ParallelFrom, raw, maxInstances)
	}
	return count, nil, nil
}

func items(raw []byte, from string) (int, [][]byte, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return 0, nil, fmt.Errorf("foreach: %s is %s, not a list", from, abbrev(raw))
	}
	if len(list) > maxInstances {
		return 0, nil, fmt.Errorf("foreach: %s has %d items, more than %d", from, len(list), maxInstances)
	}
	out := make([][]byte, len(list))
	for i, it := range list {
		out[i] = []byte(it)
	}
	return len(list), out, nil
}

// outputField returns field of the output of the upstream task named src.
func outputField(n *Task, src, field string) ([]byte, error) {
	for _, d := range n.Deps() {
		up := n.Run.Tasks[d]
		if up.Name != src {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(up.Output, &obj); err != nil {
			return nil, fmt.Errorf("output of %s is not a JSON object with %q", src, field)
		}
		v, ok := obj[field]
		if !ok {
			return nil, fmt.Errorf("output of %s has no field %q", src, field)
		}
		return v, nil
	}
	return nil, fmt.Errorf("%s is not an upstream task", src)
}

// instanceEnded updates a node when one of its instances ends; the node
// ends with the last one, with the instances' outputs as a JSON list.
func (s *State) instanceEnded(t *Task, at int64) {
	n := t.Run.Tasks[t.Parent]
	n.instActive--
	if t.Status != Success {
		n.instFailed++
	}
	if n.instActive > 0 || n.Status.Terminal() {
		return
	}
	s.touch(n)
	switch {
	case n.instFailed == 0:
		n.Output = joinOutputs(n)
		s.succeed(n, at)
	case n.Run.CancelRequested:
		n.Error = "cancelled"
		s.cancel(n, at)
	default:
		n.Error, n.ExitCode = describeFailure(n), 1
		s.fail(n, at)
	}
}

func joinOutputs(n *Task) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, idx := range n.Instances {
		if i > 0 {
			b.WriteByte(',')
		}
		if out := n.Run.Tasks[idx].Output; len(out) > 0 {
			b.Write(out)
		} else {
			b.WriteString("null")
		}
	}
	b.WriteByte(']')
	return b.Bytes()
}

// recountNodes recomputes the derived instance counters of a run's nodes.
func (s *State) recountNodes(run *Run) {
	for _, n := range run.Tasks {
		if !n.Expanded {
			continue
		}
		s.own(n)
		n.instActive, n.instFailed, n.instFlight = 0, 0, 0
		for _, i := range n.Instances {
			switch st := run.Tasks[i].Status; {
			case st.InFlight():
				n.instFlight++
				n.instActive++
			case !st.Terminal():
				n.instActive++
			case st != Success:
				n.instFailed++
			}
		}
		recountInstances(n)
	}
}

func abbrev(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "..."
	}
	return string(b)
}
