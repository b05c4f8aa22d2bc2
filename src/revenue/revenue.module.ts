import { Module } from '@nestjs/common';
import { RevenueReportController } from './revenue-report/revenue-report.controller.js';
import { RevenueReportHandler } from './revenue-report/revenue-report.handler.js';

@Module({ controllers: [RevenueReportController], providers: [RevenueReportHandler] })
export class RevenueModule {}
