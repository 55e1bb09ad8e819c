package replay

import "sort"

// mutexPush queues t behind the unfinished tasks of its key created before
// it (creation order: seed 004's version ordering).
func (s *State) mutexPush(t *Task) {
	q := s.mutexes[t.MutexKey]
	i := sort.Search(len(q), func(i int) bool { return q[i].Seq >= t.Seq })
	if i < len(q) && q[i] == t {
		return
	}
	q = append(q, nil)
	copy(q[i+1:], q[i:])
	q[i] = t
	s.mutexes[t.MutexKey] = q
	s.mutexChanged(t.MutexKey)
}

// mutexRemove takes a finished task out of its key's queue.
func (s *State) mutexRemove(t *Task) {
	if t.MutexKey == "" {
		return
	}
	q := s.mutexes[t.MutexKey]
	for i, x := range q {
		if x == t {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(s.mutexes, t.MutexKey)
	} else {
		s.mutexes[t.MutexKey] = q
	}
	s.mutexChanged(t.MutexKey)
}
