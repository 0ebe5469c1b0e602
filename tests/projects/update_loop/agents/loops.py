import torch_xla

from agents.base import Agent


def evaluate(agent: Agent, episodes):
    return [agent.score(obs.to(torch_xla.device())) for obs in episodes]


def fit(agent: Agent, replay, epochs, updates_per_epoch):
    history = []
    for _ in range(epochs):
        stats = []
        for _ in range(updates_per_epoch):
            batch = [t.to(torch_xla.device()) for t in replay.sample(256)]
            stats.append(agent.update(batch))
        history.append(evaluate(agent, replay.episodes()))
    return history
