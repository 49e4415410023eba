"""The conversation as a user has it: thread routes that read runs and checkpoints, thread
actions, feedback, artifacts and the chat page. Above the engine and the threads app."""
