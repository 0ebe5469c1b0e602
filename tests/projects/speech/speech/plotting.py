import matplotlib.pyplot as plt


def plot_alignment(logits):
    image = logits[0].softmax(-1).cpu().numpy()
    plt.imshow(image.T)
