"""Thin command-line layer: parse options, call one library function, render, exit."""
