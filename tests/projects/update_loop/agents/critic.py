import torch
from torch import nn

from agents.base import Agent


class CriticAgent(Agent):
    def __init__(self, obs_dim, act_dim):
        self.actor = nn.Linear(obs_dim, act_dim)
        self.critic = nn.Linear(obs_dim + act_dim, 1)
        self.opt = torch.optim.Adam(self.critic.parameters(), lr=3e-4)

    def _apply(self, batch):
        obs, act, target = batch
        value = self.critic(torch.cat([obs, act], dim=-1)).squeeze(-1)
        loss = (value - target).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        # one host read per gradient step
        return {"critic/loss": loss.item()}

    def score(self, obs):
        # read once per evaluation, outside the update loop
        return self.actor(obs).abs().mean().item()
