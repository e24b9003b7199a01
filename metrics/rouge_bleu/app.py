"""Gradio widget of this metric (what the Hugging Face Space runs)."""

import os
import sys

import evaluate

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    try:
        from evaluate.utils import launch_gradio_widget
        import gradio  # noqa: F401
    except ImportError:
        sys.exit("this widget needs gradio: pip install gradio")
    launch_gradio_widget(evaluate.load(HERE))
