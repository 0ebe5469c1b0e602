from agents.critic import CriticAgent
from agents.loops import fit

if __name__ == "__main__":
    fit(CriticAgent(17, 6), replay=None, epochs=100, updates_per_epoch=1000)
