export * from './agent-scheduler';
export * from './priority-queues';
export * from './scheduler-alarms';
export * from './scheduler-api';
export * from './scheduler-function';
export * from './scheduler-tables';
export * from './task-schedule';
export * from './task-schedules';
