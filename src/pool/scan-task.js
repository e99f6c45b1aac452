export {};
//# sourceMappingURL=scan-task.js.map