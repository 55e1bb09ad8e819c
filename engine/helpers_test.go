package engine

// Start2 restarts the loop after a test stopped it with halt.
func (e *Engine) Start2() {
	e.halt, e.done = make(chan struct{}), make(chan struct{})
	go e.loop()
}
