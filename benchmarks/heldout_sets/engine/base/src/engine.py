"""A tiny event-driven training engine (Ignite-like)."""
from enum import Enum


class EventFilter:
    def __init__(self, event, every=1):
        self.event = event
        self.every = every

    def __call__(self, engine):
        counter = engine.state.iteration if self.event is Events.ITERATION_COMPLETED else engine.state.epoch
        return counter % self.every == 0


class Events(Enum):
    STARTED = "started"
    EPOCH_STARTED = "epoch_started"
    ITERATION_STARTED = "iteration_started"
    ITERATION_COMPLETED = "iteration_completed"
    EPOCH_COMPLETED = "epoch_completed"
    COMPLETED = "completed"

    def __call__(self, every=1):
        return EventFilter(self, every)


class State:
    def __init__(self):
        self.iteration = 0
        self.epoch = 0
        self.max_epochs = 0
        self.max_iters = None
        self.output = None
        self.batch = None
        self.metrics = {}


class Engine:
    def __init__(self, process_fn):
        self.process_fn = process_fn
        self.state = State()
        self._handlers = {e: [] for e in Events}
        self._should_terminate = False

    def add_event_handler(self, event, handler, *args, **kwargs):
        flt = None
        if isinstance(event, EventFilter):
            flt, event = event, event.event
        self._handlers[event].append((flt, handler, args, kwargs))

    def on(self, event, *args, **kwargs):
        def decorator(fn):
            self.add_event_handler(event, fn, *args, **kwargs)
            return fn
        return decorator

    def fire(self, event):
        for flt, handler, args, kwargs in self._handlers[event]:
            if flt is None or flt(self):
                handler(self, *args, **kwargs)

    def terminate(self):
        self._should_terminate = True

    def run(self, data, max_epochs=1, max_iters=None):
        self.state.max_epochs = max_epochs
        self.state.max_iters = max_iters
        self.fire(Events.STARTED)
        while self.state.epoch < max_epochs and not self._should_terminate:
            self.state.epoch += 1
            self.fire(Events.EPOCH_STARTED)
            for batch in data:
                self.state.iteration += 1
                self.state.batch = batch
                self.fire(Events.ITERATION_STARTED)
                self.state.output = self.process_fn(self, batch)
                self.fire(Events.ITERATION_COMPLETED)
                if max_iters is not None and self.state.iteration >= max_iters:
                    self._should_terminate = True
                if self._should_terminate:
                    break
            self.fire(Events.EPOCH_COMPLETED)
        self.fire(Events.COMPLETED)
        return self.state
