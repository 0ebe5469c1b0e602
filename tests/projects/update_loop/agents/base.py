import abc


class Agent(metaclass=abc.ABCMeta):
    """One gradient update per call of `update`: the subclass computes and applies it."""

    def update(self, batch):
        self.actor.train()
        return self._apply(batch)

    @abc.abstractmethod
    def _apply(self, batch):
        """Compute the losses, step the optimizers, return statistics."""
