package executors

import "sync"

// finisher runs the reactor's finishing work (completing an exited
// process's log, reading its output, reporting Finished: see
// reactor.finish) off the reactor's goroutine, on goroutines it keeps:
// a goroutine started for every exit cost its creation, its exit and the
// growth of its stack (the report spawns the next process of a slot, and
// a spawn needs a deep stack) at every task's end. A finish never waits
// behind another (a report may block): one is handed to a parked worker
// if there is one, else a worker is started for it. At most keepIdle
// workers stay parked once there is no more to do; the others end.
type finisher struct {
	keepIdle int

	mu      sync.Mutex
	wake    sync.Cond
	queue   []func() // guarded by mu
	parked  int      // workers waiting for work and not yet signalled; guarded by mu
	started int      // workers started so far (tests); guarded by mu

	parking func() // when set, called as a worker parks, under mu (tests)
}

// finisherIdle is how many workers the reactor's finisher keeps parked:
// as many as a few exits seen in one batch.
const finisherIdle = 4

func newFinisher(keepIdle int) *finisher {
	f := &finisher{keepIdle: keepIdle}
	f.wake.L = &f.mu
	return f
}

// run has work run on a worker, now or as soon as one is free of the
// work handed out before; never behind a worker busy with other work.
func (f *finisher) run(work func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, work)
	if f.parked > 0 {
		f.parked-- // this one's: a later run signals another
		f.wake.Signal()
		return
	}
	f.started++
	go f.work()
}

// work runs queued work until there is none, then parks, or ends if
// keepIdle workers are parked already.
func (f *finisher) work() {
	f.mu.Lock()
	for {
		if len(f.queue) > 0 {
			w := f.queue[0]
			f.queue[0] = nil
			f.queue = f.queue[1:]
			f.mu.Unlock()
			w()
			f.mu.Lock()
			continue
		}
		f.queue = nil // let the backing array go
		if f.parked >= f.keepIdle {
			f.mu.Unlock()
			return
		}
		f.parked++
		if f.parking != nil {
			f.parking()
		}
		f.wake.Wait() // signalled by run, which took it off parked
	}
}
