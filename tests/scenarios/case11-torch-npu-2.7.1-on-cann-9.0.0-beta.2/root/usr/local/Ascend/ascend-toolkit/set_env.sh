# compatibility entry point (content not captured)
