import { Module } from '@nestjs/common';
import { FxRatesFetcher } from './fx-rates-fetcher.js';

/** The scheduled fetch of the ECB's reference rates: off unless FX_RATES_URL is set (docs/exchange-rates.md). */
@Module({ providers: [FxRatesFetcher] })
export class FxModule {}
