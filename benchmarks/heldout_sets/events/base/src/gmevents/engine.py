"""A small event-driven training engine (Ignite-like, hand-written)."""
import enum
from collections import defaultdict


class EventFilter:
    """An event with a firing condition: Events.ITERATION_COMPLETED(every=50)."""

    def __init__(self, event, every=None, once=None):
        self.event, self.every, self.once = event, every, once

    def should_fire(self, engine):
        counter = engine.state.epoch if self.event.name.startswith("EPOCH") else engine.state.iteration
        if self.every is not None and counter % self.every != 0:
            return False
        if self.once is not None and counter != self.once:
            return False
        return True


class Events(enum.Enum):
    STARTED = "started"
    EPOCH_STARTED = "epoch_started"
    ITERATION_STARTED = "iteration_started"
    BACKWARD_COMPLETED = "backward_completed"   # fired by a process_fn between backward and step
    ITERATION_COMPLETED = "iteration_completed"
    EPOCH_COMPLETED = "epoch_completed"
    COMPLETED = "completed"

    def __call__(self, every=None, once=None):
        return EventFilter(self, every=every, once=once)


class State:
    def __init__(self, max_epochs=1):
        self.iteration = 0
        self.epoch = 0
        self.max_epochs = max_epochs
        self.output = None
        self.batch = None
        self.metrics = {}


class Engine:
    """Runs `process_fn(engine, batch)` over a data iterable and fires events around it."""

    def __init__(self, process_fn):
        self._process_fn = process_fn
        self._handlers = defaultdict(list)
        self.state = State()
        self.should_terminate = False

    def add_event_handler(self, event, handler, *args, **kwargs):
        flt = None
        if isinstance(event, EventFilter):
            event, flt = event.event, event
        self._handlers[event].append((handler, flt, args, kwargs))
        return handler

    def on(self, event, *args, **kwargs):
        def decorator(fn):
            self.add_event_handler(event, fn, *args, **kwargs)
            return fn
        return decorator

    def has_handlers(self, event):
        return bool(self._handlers[event])

    def fire_event(self, event):
        for handler, flt, args, kwargs in list(self._handlers[event]):
            if flt is None or flt.should_fire(self):
                handler(self, *args, **kwargs)

    def terminate(self):
        self.should_terminate = True

    def run(self, data, max_epochs=1):
        self.state = State(max_epochs=max_epochs)
        self.should_terminate = False
        self.fire_event(Events.STARTED)
        while self.state.epoch < max_epochs and not self.should_terminate:
            self.state.epoch += 1
            self.fire_event(Events.EPOCH_STARTED)
            for batch in data:
                self.state.iteration += 1
                self.state.batch = batch
                self.fire_event(Events.ITERATION_STARTED)
                self.state.output = self._process_fn(self, batch)
                self.fire_event(Events.ITERATION_COMPLETED)
                if self.should_terminate:
                    break
            self.fire_event(Events.EPOCH_COMPLETED)
        self.fire_event(Events.COMPLETED)
        return self.state
