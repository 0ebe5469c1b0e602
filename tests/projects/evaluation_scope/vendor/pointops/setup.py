from setuptools import setup

setup(name="pointops", version="0.1")
